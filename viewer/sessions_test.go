package viewer_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/viewer"
)

// rootResolver confines names to files under root and reads them through
// an os.Root, as a daemon does: a symlink that leads out is refused.
func rootResolver(t *testing.T, root string) func(string) (viewer.Source, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return func(name string) (viewer.Source, error) {
		for _, seg := range strings.Split(name, "/") {
			if seg == "" || strings.HasPrefix(seg, ".") {
				return viewer.Source{}, errors.New("not a session name")
			}
		}
		return viewer.Source{
			Path: filepath.Join(root, filepath.FromSlash(name)),
			Tail: viewer.FileTail(func() (*os.File, error) { return r.Open(name) }, nil),
		}, nil
	}
}

func TestSessions(t *testing.T) {
	root := t.TempDir()
	demo, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "team"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.jsonl", "b.jsonl", "team/c.jsonl"} {
		if err := os.WriteFile(filepath.Join(root, n), demo, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	if err := os.WriteFile(outside, demo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape.jsonl")); err != nil {
		t.Fatal(err)
	}
	window := 100000
	s := viewer.NewSessions(viewer.SessionsOptions{
		Resolve: rootResolver(t, root),
		List:    func(*http.Request) ([]string, error) { return []string{"b.jsonl", "<a>.jsonl"}, nil },
		Authorize: func(r *http.Request, name string) error {
			if strings.HasPrefix(name, "team/") && r.Header.Get("X-Team") != "yes" {
				return fmt.Errorf("%q is outside what this caller may see", name)
			}
			return nil
		},
		Settings: func() viewer.Settings { return viewer.Settings{ContextWindow: window, ReserveTokens: 1000} },
		Idle:     20 * time.Millisecond,
		MaxOpen:  func() int { return 2 },
	})
	srv := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); srv.Close() })

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, `href="/s/b.jsonl/"`) || strings.Contains(body, "<a>") {
		t.Errorf("index: %d, names must be linked and escaped:\n%s", code, body)
	}
	if code, body := get("/s/a.jsonl/api/session"); code != 200 || !strings.Contains(body, `"entries":37`) || !strings.Contains(body, `"contextWindow":100000`) {
		t.Errorf("session a: %d %s", code, body)
	}
	if code, body := get("/s/b.jsonl/"); code != 200 || !strings.Contains(body, "app.js") {
		t.Errorf("page of b: %d", code)
	}
	// The settings are read per request: a reload shows at once.
	window = 50000
	if _, body := get("/s/a.jsonl/api/session"); !strings.Contains(body, `"contextWindow":50000`) {
		t.Errorf("settings not current: %s", body)
	}
	for _, bad := range []string{"/s/escape.jsonl/api/session", "/s/team/api/session", "/s/a.json/api/session", "/s/../a.jsonl/api/session", "/s/.hidden.jsonl/api/session", "/s/nope.jsonl/api/session", "/s/%2e%2e%2fa.jsonl/api/session", "/elsewhere"} {
		if code, _ := get(bad); code != http.StatusNotFound && code != http.StatusMovedPermanently {
			t.Errorf("%s: status %d, want 404", bad, code)
		}
	}
	// Authorization is asked on every request, not once per open session.
	if code, _ := get("/s/team/c.jsonl/api/session"); code != http.StatusForbidden {
		t.Errorf("team session without the header: %d, want 403", code)
	}
	// MaxOpen: a third session closes the least recently used idle one.
	req, _ := http.NewRequest("GET", srv.URL+"/s/team/c.jsonl/api/session", nil)
	req.Header.Set("X-Team", "yes")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("third session: %d", resp.StatusCode)
	}
	if code, _ := get("/s/team/c.jsonl/api/tree"); code != http.StatusForbidden {
		t.Errorf("team session open, asked without the header: %d, want 403", code)
	}
	if n := s.Open(); n > 2 {
		t.Errorf("%d sessions open, want at most 2", n)
	}
	// Idle sessions are closed by the sweep.
	deadline := time.Now().Add(10 * time.Second)
	for s.Open() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.Open(); n != 0 {
		t.Errorf("%d sessions still open after they went idle", n)
	}
	// A foreign Host is refused here too.
	req, _ = http.NewRequest("GET", srv.URL+"/", nil)
	req.Host = "rebind.example"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("foreign host: %d", resp.StatusCode)
	}
}

// TestSessionsFairShare: with every slot held by a live page, a caller
// with at least two more live sessions than the one asking gives up its
// least recently used one; at a level share the asker gets 503 (so a page
// reconnecting cannot take the slot back), and a session live for two
// callers is never the one given up.
func TestSessionsFairShare(t *testing.T) {
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
	s := viewer.NewSessions(viewer.SessionsOptions{
		Resolve: rootResolver(t, root),
		MaxOpen: func() int { return 2 },
		Caller:  func(r *http.Request) string { return r.Header.Get("X-Caller") },
	})
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); s.Close() })
	// live opens name's event stream as who and reads its first event;
	// its body, or nil and the refusal's status.
	live := func(who, name string) (io.ReadCloser, int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/s/"+name+"/api/events", nil)
		req.Header.Set("X-Caller", who)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, resp.StatusCode
		}
		buf := make([]byte, 64)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatalf("%s's stream of %s: %v", who, name, err)
		}
		return resp.Body, http.StatusOK
	}
	must := func(who, name string) io.ReadCloser {
		t.Helper()
		body, code := live(who, name)
		if code != http.StatusOK {
			t.Fatalf("%s's live page of %s: %d", who, name, code)
		}
		t.Cleanup(func() { body.Close() })
		return body
	}
	a1 := must("a", "s1.jsonl")
	must("a", "s2.jsonl")
	// Both slots are a's: b gets in, and a's least recently used goes.
	must("b", "s3.jsonl")
	if _, err := io.Copy(io.Discard, a1); err != nil {
		t.Fatalf("a's page of s1 was not ended: %v", err)
	}
	// One each: a asking again (its page of s1 reconnecting) gets 503.
	if _, code := live("a", "s1.jsonl"); code != http.StatusServiceUnavailable {
		t.Fatalf("a's page at a level share: %d, want 503", code)
	}
	// s2 is live for a and for c; s3 only for b. d gets nothing: b has
	// one live session, not two more than d's none, and s2 serves two.
	must("c", "s2.jsonl")
	if _, code := live("d", "s4.jsonl"); code != http.StatusServiceUnavailable {
		t.Fatalf("d's page: %d, want 503", code)
	}
}
