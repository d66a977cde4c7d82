package viewer_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pith-dev/pith/viewer"
)

// TestSessionsOpenDoesNotBlockOthers: opening one session (reading it
// whole: a second or more for 100 MB, up to the store's timeout for a
// shared store) must not hold up the requests for every other session.
// Before, the first reading ran under the lock every request takes, so
// one large or slow session stalled the whole viewer, every tenant's
// pages included, for as long as it took.
func TestSessionsOpenDoesNotBlockOthers(t *testing.T) {
	root := t.TempDir()
	demo, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "b.jsonl"), demo, 0o644); err != nil {
		t.Fatal(err)
	}
	files := rootResolver(t, root)
	entered, release := make(chan struct{}), make(chan struct{})
	s := viewer.NewSessions(viewer.SessionsOptions{
		Resolve: func(name string) (viewer.Source, error) {
			if name != "slow.jsonl" {
				return files(name)
			}
			return viewer.Source{Name: name, Tail: func(after int) ([]byte, int, error) {
				close(entered)
				<-release // a reading that takes its time
				return demo, 0, nil
			}}, nil
		},
	})
	srv := httptest.NewServer(s)
	defer func() {
		srv.CloseClientConnections()
		srv.Close()
		s.Close()
	}()
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		if resp, err := http.Get(srv.URL + "/s/slow.jsonl/api/session"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	// A liveness bound, not a timing: the request either completes or
	// waits for the slow reading forever.
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(srv.URL + "/s/b.jsonl/api/session")
	close(release)
	<-slowDone
	if err != nil {
		t.Fatalf("another session while one is being opened: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another session while one is being opened: %d", resp.StatusCode)
	}
}
