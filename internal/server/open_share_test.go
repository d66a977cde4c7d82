package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// TestOpenSessionsSharePerCaller: one caller cannot lock another out of
// the daemon's open sessions. server.maxOpenSessions was the only bound:
// a token opening sessions and keeping them in use (an event stream on
// each) filled it, and every other tenant's open was refused ("4 sessions
// are open and busy"); its idle sessions, kept in memory, were closed
// only as the least recently used of all, another tenant's first. Past
// its share (server.maxOpenSessionsPerCaller) a caller's own least
// recently used idle session is closed, or its open refused; another
// caller's sessions are not touched, and a reload changes the share for
// the next open.
func TestOpenSessionsSharePerCaller(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxOpenSessions = 4
	cfg.Server.MaxOpenSessionsPerCaller = 2
	cfg.Server.Tokens = []config.Token{
		{Name: "a", SHA256: HashToken("secret-a"), Prefix: "a/"},
		{Name: "b", SHA256: HashToken("secret-b"), Prefix: "b/"},
	}
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func(tok string) *client.Client {
		c, err := client.Dial(h.addr, client.WithToken(tok))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := dial("secret-a"), dial("secret-b")
	create := func(c *client.Client, name string) *client.Session {
		t.Helper()
		s, err := c.Create(ctx, name, "/w")
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return s
	}
	watch := func(s *client.Session) {
		t.Helper()
		w, err := s.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
	}
	isOpen := func(s *client.Session) bool {
		h.srv.mu.Lock()
		defer h.srv.mu.Unlock()
		_, ok := h.srv.sessions[s.ID]
		return ok
	}

	// b's session is the least recently used of all.
	b1 := create(b, "b/1.jsonl")
	a1 := create(a, "a/1.jsonl")
	a2 := create(a, "a/2.jsonl")
	watch(a2)
	// a at its share: its own idle session goes, not b's older one.
	a3 := create(a, "a/3.jsonl")
	if isOpen(a1) {
		t.Fatal("a caller past its share kept its idle session open")
	}
	if !isOpen(b1) {
		t.Fatal("a caller past its share closed another caller's session")
	}
	// Every session of a's share in use: a is refused, b is not.
	watch(a3)
	if _, err := a.Open(ctx, "a/1.jsonl"); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("an open past the caller's share, every one in use: %v, want ResourceExhausted", err)
	}
	if _, err := a.Create(ctx, "a/4.jsonl", "/w"); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("a create past the caller's share, every one in use: %v, want ResourceExhausted", err)
	}
	b2 := create(b, "b/2.jsonl")
	if !isOpen(b1) || !isOpen(b2) {
		t.Fatal("another caller's sessions were closed")
	}
	// A call naming a's closed session reopens it within the share only.
	if _, err := a1.Context(ctx); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("a transparent reopen past the caller's share: %v, want ResourceExhausted", err)
	}
	if n := h.srv.held("a", slotSession); n != 2 {
		t.Fatalf("caller a holds %d sessions, want 2", n)
	}

	// A reload raising the share applies to the next open; the global
	// bound then closes the least recently used idle session (b's).
	next := *h.srv.Config()
	next.Server.MaxOpenSessionsPerCaller = 3
	h.srv.ApplyConfig(config.Change{Old: cfg, New: &next})
	if _, err := a1.Context(ctx); err != nil {
		t.Fatalf("after raising server.maxOpenSessionsPerCaller: %v", err)
	}
	if isOpen(b1) || !isOpen(b2) {
		t.Fatal("the global bound did not close the least recently used idle session")
	}
	if n := h.srv.held("b", slotSession); n != 1 {
		t.Fatalf("caller b holds %d sessions after one was closed, want 1", n)
	}
	// Closing gives the share back.
	if err := b2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.srv.held("b", slotSession); n != 0 {
		t.Fatalf("caller b holds %d sessions after closing them, want 0", n)
	}
}

// TestOpenSessionsNoShareWithoutCallers: a daemon that cannot tell callers
// apart (no tokens, no client certificates) keeps server.maxOpenSessions
// open: every call is the one anonymous caller, whose share only shrank
// the daemon's own bound (a single-user daemon re-read past 256 sessions
// files it used to keep).
func TestOpenSessionsNoShareWithoutCallers(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxOpenSessions = 4
	cfg.Server.MaxOpenSessionsPerCaller = 2
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 4 {
		if _, err := c.Create(ctx, fmt.Sprintf("s%d.jsonl", i), "/w"); err != nil {
			t.Fatal(err)
		}
	}
	h.srv.mu.Lock()
	open := len(h.srv.sessions)
	h.srv.mu.Unlock()
	if open != 4 {
		t.Errorf("%d sessions open, want server.maxOpenSessions = 4", open)
	}
}
