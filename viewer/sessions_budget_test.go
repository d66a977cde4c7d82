package viewer_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/viewer"
)

// budgetSessions serves copies of the demo session a.jsonl … under a byte
// budget of budget demo sizes (plus a little), and returns the server and
// the demo's size.
func budgetSessions(t *testing.T, names []string, budget float64) (*viewer.Sessions, *httptest.Server, string, int64) {
	t.Helper()
	root := t.TempDir()
	demo, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(root, n), demo, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	size := int64(len(demo))
	s := viewer.NewSessions(viewer.SessionsOptions{
		Resolve:  rootResolver(t, root),
		MaxBytes: func() int64 { return int64(budget * float64(size)) },
	})
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.CloseClientConnections(); s.Close(); srv.Close() })
	return s, srv, root, size
}

func status(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestSessionsByteBudget: the viewer holds each open session whole (about
// 2.5 times its size in memory), and only their count was bounded — 64
// sessions of up to 512 MiB from one caller. MaxBytes bounds their bytes
// together: the least recently used session without a live page is
// closed to make room; with every byte held by live pages the request is
// refused (503, saying why); a session larger than the budget alone is
// refused (413) and leaves the open ones alone.
func TestSessionsByteBudget(t *testing.T) {
	s, srv, root, size := budgetSessions(t, []string{"a.jsonl", "b.jsonl", "c.jsonl", "big.jsonl"}, 2.5)
	demo, _ := os.ReadFile(filepath.Join(root, "a.jsonl"))
	if err := os.WriteFile(filepath.Join(root, "big.jsonl"), append(append(append([]byte{}, demo...), demo[strings.IndexByte(string(demo), '\n')+1:]...), demo[strings.IndexByte(string(demo), '\n')+1:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if code, body := status(t, srv.URL+"/s/"+n+".jsonl/api/session"); code != http.StatusOK {
			t.Fatalf("%s: %d %s", n, code, body)
		}
		if got := s.Bytes(); got > int64(2.5*float64(size)) {
			t.Fatalf("after %s the viewer holds %d bytes of sessions, over its budget %d", n, got, int64(2.5*float64(size)))
		}
	}
	if n := s.Open(); n != 2 {
		t.Fatalf("%d sessions open, want the 2 that fit", n)
	}
	// a, the least recently used, was closed: b and c are open.
	code, body := status(t, srv.URL+"/s/big.jsonl/api/session")
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "larger than the viewer's byte budget") {
		t.Fatalf("a session larger than the budget: %d %q, want 413 saying so", code, body)
	}
	if n := s.Open(); n != 2 {
		t.Fatalf("refusing a session too large closed others: %d open", n)
	}

	// Live pages on b and c hold the budget: a is refused, not let in.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range []string{"b", "c"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/s/"+n+".jsonl/api/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	code, body = status(t, srv.URL+"/s/a.jsonl/api/session")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "byte budget") {
		t.Fatalf("a session past a budget held by live pages: %d %q, want 503", code, body)
	}
}

// TestSessionsByteBudgetGrowth: a session that grows by appends past the
// budget closes the least recently used other sessions.
func TestSessionsByteBudgetGrowth(t *testing.T) {
	s, srv, root, size := budgetSessions(t, []string{"a.jsonl", "b.jsonl"}, 2.5)
	for _, n := range []string{"a", "b"} {
		if code, body := status(t, srv.URL+"/s/"+n+".jsonl/api/session"); code != http.StatusOK {
			t.Fatalf("%s: %d %s", n, code, body)
		}
	}
	demo, _ := os.ReadFile(filepath.Join(root, "b.jsonl"))
	body := demo[strings.IndexByte(string(demo), '\n')+1:]
	f, err := os.OpenFile(filepath.Join(root, "b.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The same entries again: a rewrite in the viewer's eyes (ids seen), read whole.
	if _, err := f.Write(body); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s.Refresh("b.jsonl")
	deadline := time.Now().Add(30 * time.Second)
	for s.Bytes() <= size || s.Open() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("after b grew to %d bytes: %d open, %d bytes held (budget %d)", len(demo)+len(body), s.Open(), s.Bytes(), int64(2.5*float64(size)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, _ := status(t, srv.URL+"/s/b.jsonl/api/session"); code != http.StatusOK {
		t.Fatalf("the session that grew is gone: %d", code)
	}
}

// TestSessionsByteBudgetBeforeReading: room is made for a session's size
// (as its source tells it) before it is read and held while it is: first
// readings running at once cannot pass the budget together, and a
// session larger than the budget is not read at all.
func TestSessionsByteBudgetBeforeReading(t *testing.T) {
	demo, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(demo))
	release := make(chan struct{})
	reading := make(chan string, 4)
	s := viewer.NewSessions(viewer.SessionsOptions{
		Resolve: func(name string) (viewer.Source, error) {
			sz := size
			if name == "huge.jsonl" {
				sz = 100 * size
			}
			return viewer.Source{Name: name, Size: sz, Tail: func(after int) ([]byte, int, error) {
				reading <- name
				if name == "a.jsonl" {
					<-release
				}
				return demo, strings.Count(string(demo), "\n"), nil
			}}, nil
		},
		MaxBytes: func() int64 { return size + size/2 },
	})
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.CloseClientConnections(); s.Close(); srv.Close() })
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the server's: a failure must not leave a's reading hanging

	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/s/a.jsonl/api/session")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	if got := <-reading; got != "a.jsonl" {
		t.Fatalf("reading %s", got)
	}
	// a is being read and holds its room: b does not fit beside it.
	code, body := status(t, srv.URL+"/s/b.jsonl/api/session")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "byte budget") {
		t.Fatalf("a second first reading past the budget: %d %q, want 503", code, body)
	}
	code, body = status(t, srv.URL+"/s/huge.jsonl/api/session")
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a session larger than the budget: %d %q, want 413", code, body)
	}
	unblock()
	if code := <-first; code != http.StatusOK {
		t.Fatalf("a: %d", code)
	}
	select {
	case got := <-reading:
		t.Fatalf("%s was read", got)
	default:
	}
}
