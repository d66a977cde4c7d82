package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// TestAnotherNameIsCheckedAgain: a session's second name (here a hard
// link in another tenant's tree) was proved once, when it was opened by
// it, and never again: after the link was removed its tenant kept
// reading and watching the session by id, and a transparent reopen
// restored the name unchecked (the last compaction run showed under it).
// A name other than the session's own is now checked on use, and
// dropped when it no longer leads to the session's file.
func TestAnotherNameIsCheckedAgain(t *testing.T) {
	ctx := context.Background()
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
	if _, err := sa.AppendMessages(ctx, userMsg("a's", 20)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "team-b"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "team-b", "y.jsonl")
	linkAndOpen := func() *client.Session {
		t.Helper()
		if err := os.Link(filepath.Join(root, "team-a", "x.jsonl"), link); err != nil {
			t.Fatal(err)
		}
		sb, err := b.Open(ctx, "team-b/y.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sb.Context(ctx); err != nil {
			t.Fatalf("team-b reading by its link: %v", err)
		}
		return sb
	}
	refused := func(sb *client.Session, when string) {
		t.Helper()
		if _, err := sb.Context(ctx); !errors.Is(err, client.ErrPermissionDenied) {
			t.Fatalf("team-b reading a's session by id %s: %v, want permission denied", when, err)
		}
		w, err := sb.Watch(ctx)
		if err == nil { // a refusal can come as the stream's first answer
			_, err = w.Next()
			w.Close()
		}
		if !errors.Is(err, client.ErrPermissionDenied) {
			t.Fatalf("team-b watching a's session by id %s: %v, want permission denied", when, err)
		}
	}

	// The link removed while the session stays open by a's name: b's
	// stream watching it ends at the next event, and b is refused.
	sb := linkAndOpen()
	w, err := sb.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.AppendMessages(ctx, userMsg("a's secret", 20)); err != nil {
		t.Fatal(err)
	}
	if ev, err := w.Next(); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("team-b's stream after the link was removed: event %+v, error %v; want permission denied", ev, err)
	}
	refused(sb, "after the link was removed")
	if _, err := sa.Context(ctx); err != nil {
		t.Fatalf("team-a reading its session: %v", err)
	}

	// The link removed while the session was closed for the limit; a's
	// call reopens it.
	sb = linkAndOpen()
	h.srv.mu.Lock()
	if !h.srv.evictLocked(h.srv.sessions[sa.ID]) {
		h.srv.mu.Unlock()
		t.Fatal("the session could not be closed")
	}
	h.srv.mu.Unlock()
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Context(ctx); err != nil {
		t.Fatalf("team-a reading its session after it was closed: %v", err)
	}
	h.srv.mu.Lock()
	o := h.srv.sessions[sa.ID]
	h.srv.mu.Unlock()
	if o == nil {
		t.Fatal("the session was not reopened")
	}
	o.namesMu.Lock()
	names := slices.Clone(o.names)
	o.namesMu.Unlock()
	if slices.Contains(names, "team-b/y.jsonl") {
		t.Fatalf("the reopened session's names: %q, the removed link restored", names)
	}
	refused(sb, "after the link was removed and the session reopened")
}

// BenchmarkReachableBy: the check of a caller against a session's names
// on every call — by the session's own name (no system call), and by
// another name, checked again against the file each time.
func BenchmarkReachableBy(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	h := startServer(b, testConfig(root))
	s, err := h.client.Create(ctx, "team-a/x.jsonl", "/w")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "team-b"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "team-a", "x.jsonl"), filepath.Join(root, "team-b", "y.jsonl")); err != nil {
		b.Fatal(err)
	}
	if _, err := h.client.Open(ctx, "team-b/y.jsonl"); err != nil {
		b.Fatal(err)
	}
	h.srv.mu.Lock()
	o := h.srv.sessions[s.ID]
	h.srv.mu.Unlock()
	for _, bc := range []struct {
		name string
		c    caller
	}{{"own name", caller{name: "a", prefix: "team-a/"}}, {"other name", caller{name: "b", prefix: "team-b/"}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if !o.reachableBy(bc.c) {
					b.Fatal("refused")
				}
			}
		})
	}
}
