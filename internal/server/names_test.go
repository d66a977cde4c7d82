package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// TestTwoNamesAnswerTheirOwn: a session file reached by two names is one
// session in the daemon, and OpenSession answers each caller with the
// name it asked for. Before, the second name was answered with the first
// one's path — with tenants, another tenant's (a hard link team-b/y.jsonl
// of team-a/x.jsonl told team-b's token "team-a/x.jsonl") — and that
// caller's next calls were refused, checked against the other name.
func TestTwoNamesAnswerTheirOwn(t *testing.T) {
	ctx := context.Background()
	t.Run("symlinked directory", func(t *testing.T) {
		root := t.TempDir()
		h := startServer(t, testConfig(root))
		first, err := h.client.Create(ctx, "team/s.jsonl", "/w")
		if err != nil {
			t.Fatal(err)
		}
		mustSymlink(t, "team", filepath.Join(root, "alias"))
		second, err := h.client.Open(ctx, "alias/s.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if second.ID != first.ID || second.Path != "alias/s.jsonl" {
			t.Fatalf("opened by its second name: id %s path %q, want id %s path %q", second.ID, second.Path, first.ID, "alias/s.jsonl")
		}
		// The last compaction run shows under both names (the viewer's
		// daemon panel reads it by the page's name).
		if _, err := second.AppendMessages(ctx, userMsg("q", 400), assistantMsg("a", 400), userMsg("q2", 400), assistantMsg("a2", 400), userMsg("q3", 400)); err != nil {
			t.Fatal(err)
		}
		if _, err := second.Compact(ctx, "", nil); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"team/s.jsonl", "alias/s.jsonl"} {
			if run, ok := h.srv.lastRunByName(name); !ok || run.Session != first.ID || run.Name != name {
				t.Errorf("last run under %s: %+v, %v", name, run, ok)
			}
		}
	})
	t.Run("hard link across tenants", func(t *testing.T) {
		root := t.TempDir()
		cfg := testConfig(root)
		cfg.Server.Tokens = []config.Token{
			{Name: "a", SHA256: HashToken("secret-a"), Prefix: "team-a/"},
			{Name: "b", SHA256: HashToken("secret-b"), Prefix: "team-b/"},
		}
		h := startServer(t, cfg)
		dial := func(tok string) *client.Client {
			c, err := client.Dial(h.addr, client.WithToken(tok))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		a, b := dial("secret-a"), dial("secret-b")
		sa, err := a.Create(ctx, "team-a/x.jsonl", "/w")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sa.AppendMessages(ctx, userMsg("shared", 20)); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, "team-b"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(root, "team-a", "x.jsonl"), filepath.Join(root, "team-b", "y.jsonl")); err != nil {
			t.Fatal(err)
		}
		sb, err := b.Open(ctx, "team-b/y.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if sb.ID != sa.ID || sb.Path != "team-b/y.jsonl" {
			t.Fatalf("team-b's name of the file: id %s path %q, want id %s path %q", sb.ID, sb.Path, sa.ID, "team-b/y.jsonl")
		}
		// b reads the session it reached by its own name, as a first
		// opener would.
		if _, err := sb.Context(ctx); err != nil {
			t.Fatalf("team-b reading the session it opened: %v", err)
		}
		// a still reads it, by a's name.
		if again, err := a.Open(ctx, "team-a/x.jsonl"); err != nil || again.Path != "team-a/x.jsonl" {
			t.Fatalf("team-a opening its name again: %v, path %q", err, again.Path)
		}
		// Closed (for idleness, the count limit) and reopened: b's name
		// still lets b in.
		h.srv.mu.Lock()
		o := h.srv.sessions[sa.ID]
		if !h.srv.evictLocked(o) {
			h.srv.mu.Unlock()
			t.Fatal("the session could not be closed")
		}
		h.srv.mu.Unlock()
		if _, err := sb.Context(ctx); err != nil {
			t.Fatalf("team-b reading the session after it was closed for the limit: %v", err)
		}
		// A third tenant never gets in by the id.
		if _, err := h.srv.get(context.WithValue(ctx, callerKey{}, caller{name: "c", prefix: "team-c/"}), sa.ID); err == nil {
			t.Fatal("a caller of neither name reached the session by its id")
		}
	})
}
