package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pith-dev/pith/config"
)

// TestViewerMaxBytes: server.viewerMaxBytes bounds the bytes of the
// sessions the daemon's viewer holds open together (before, only their
// count: 64 of up to server.maxSessionBytes each). A session larger than
// the whole budget is refused before it is read (413, naming the
// setting) and closes nothing; another is opened within the budget by
// closing the least recently used.
func TestViewerMaxBytes(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	hs := httptestServer(t, h.srv.NewViewer(false))
	ctx := context.Background()
	for name, n := range map[string]int{"a.jsonl": 1000, "b.jsonl": 2000, "big.jsonl": 8000, "d.jsonl": 1000} {
		s, err := h.client.Create(ctx, name, "/w")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, userMsg(strings.Repeat("x", n), 20)); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) (int, string) {
		t.Helper()
		resp, err := http.Get(hs.URL + "/s/" + name + "/api/session")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, n := range []string{"a.jsonl", "b.jsonl"} {
		if code, body := get(n); code != http.StatusOK {
			t.Fatalf("%s: %d %s", n, code, body)
		}
	}
	vs := h.srv.viewer.Load()
	old := h.srv.Config()
	next := *old
	next.Server.ViewerMaxBytes = int(vs.Bytes()) // what a and b hold
	h.srv.ApplyConfig(config.Change{Old: old, New: &next})

	code, body := get("big.jsonl")
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "server.viewerMaxBytes") {
		t.Fatalf("a session larger than server.viewerMaxBytes: %d %q, want 413 naming the setting", code, body)
	}
	if n := vs.Open(); n != 2 {
		t.Fatalf("refusing a session too large left %d sessions open, want a and b", n)
	}
	if code, body := get("d.jsonl"); code != http.StatusOK {
		t.Fatalf("d: %d %s", code, body)
	}
	if got := vs.Bytes(); got > int64(next.Server.ViewerMaxBytes) || vs.Open() != 2 {
		t.Fatalf("the viewer holds %d bytes in %d sessions, server.viewerMaxBytes is %d", got, vs.Open(), next.Server.ViewerMaxBytes)
	}
}
