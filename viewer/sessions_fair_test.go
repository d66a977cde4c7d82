package viewer_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pith-dev/pith/viewer"
)

// TestSessionsFairShareOnlyForWhatResolves: the fair share closed another
// caller's live page before the name was resolved, and counted a caller's
// sessions still being read as none of its own. So a request for a
// missing name (a 404) ended one of another caller's live pages each
// time, and a caller firing requests for sessions that take long to read
// ended one more page with every request.
func TestSessionsFairShareOnlyForWhatResolves(t *testing.T) {
	root := t.TempDir()
	demo, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"s1.jsonl", "s2.jsonl", "s3.jsonl", "s4.jsonl"} {
		if err := os.WriteFile(filepath.Join(root, n), demo, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := rootResolver(t, root)
	entered, release := make(chan struct{}, 4), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	s := viewer.NewSessions(viewer.SessionsOptions{
		Resolve: func(name string) (viewer.Source, error) {
			if strings.HasPrefix(name, "nope") {
				return viewer.Source{}, errors.New("no such session")
			}
			if !strings.HasPrefix(name, "slow") {
				return files(name)
			}
			return viewer.Source{Name: name, Tail: func(after int) ([]byte, int, error) {
				entered <- struct{}{}
				<-release // a large session being read
				return demo, 0, nil
			}}, nil
		},
		MaxOpen: func() int { return 3 },
		Caller:  func(r *http.Request) string { return r.Header.Get("X-Caller") },
	})
	srv := httptest.NewServer(s)
	t.Cleanup(func() { unblock(); srv.CloseClientConnections(); srv.Close(); s.Close() })
	get := func(who, path string) (io.ReadCloser, int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("X-Caller", who)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.HasSuffix(path, "/api/events") {
			resp.Body.Close()
			return nil, resp.StatusCode
		}
		buf := make([]byte, 64)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatalf("%s's stream %s: %v", who, path, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp.Body, http.StatusOK
	}
	for _, n := range []string{"s1.jsonl", "s2.jsonl", "s3.jsonl"} {
		if _, code := get("a", "/s/"+n+"/api/events"); code != http.StatusOK {
			t.Fatalf("a's live page of %s: %d", n, code)
		}
	}
	// Every slot is one of a's live pages. b asking for missing sessions
	// gets 404 and ends none of them ...
	for i := range 3 {
		if _, code := get("b", "/s/nope-"+string(rune('0'+i))+".jsonl/api/tree"); code != http.StatusNotFound {
			t.Fatalf("b's request for a missing session: %d, want 404", code)
		}
	}
	// ... so every slot is still a's: a's next page finds none free.
	if _, code := get("a", "/s/s4.jsonl/api/events"); code != http.StatusServiceUnavailable {
		t.Fatalf("a's fourth live page after b's 404s: %d, want 503 (b's 404s closed a's pages)", code)
	}

	// b opens a session that takes long to read: one of a's pages makes
	// room (3 held against none).
	codes := make(chan int, 2)
	slow := func(name string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/s/"+name+"/api/tree", nil)
		req.Header.Set("X-Caller", "b")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			codes <- 0
			return
		}
		resp.Body.Close()
		codes <- resp.StatusCode
	}
	go slow("slow1.jsonl")
	<-entered
	// While it is read it is b's: b's second finds a at 2 held against
	// b's 1, a level share, and is refused rather than end another page.
	go slow("slow2.jsonl")
	select {
	case code := <-codes:
		if code != http.StatusServiceUnavailable {
			t.Fatalf("b's second slow session: %d, want 503", code)
		}
	case <-entered:
		t.Fatal("b's second slow session ended another of a's pages: b's session being read counted as none of b's")
	}
	unblock()
	if code := <-codes; code != http.StatusOK {
		t.Fatalf("b's first slow session: %d", code)
	}
}
