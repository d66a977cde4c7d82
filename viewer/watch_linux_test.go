//go:build linux

package viewer_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/viewer"
)

// inotifyInstances counts this process's inotify file descriptors.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestSessionsShareOneWatch: the sessions a daemon's viewer has open share
// one inotify instance. Each took one of its own, and the kernel allows a
// user 128 (fs.inotify.max_user_instances by default): any viewer client
// opening 64 sessions took half of what the daemon's user has, for its
// editors and every other program of that user too — and the viewer's
// next sessions failed once they ran out.
func TestSessionsShareOneWatch(t *testing.T) {
	root := t.TempDir()
	demo, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%4))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%02d.jsonl", i)), demo, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := inotifyInstances(t)
	s := viewer.NewSessions(viewer.SessionsOptions{Resolve: rootResolver(t, root)})
	srv := httptest.NewServer(s)
	defer func() {
		srv.Close()
		s.Close()
	}()
	for i := range n {
		resp, err := http.Get(fmt.Sprintf("%s/s/d%02d/s%02d.jsonl/api/session", srv.URL, i%4, i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("session %d: %d", i, resp.StatusCode)
		}
	}
	if got := inotifyInstances(t) - before; got > 1 {
		t.Fatalf("%d sessions open hold %d inotify instances, want 1", n, got)
	}
}
