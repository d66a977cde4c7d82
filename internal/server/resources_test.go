package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
)

func (s *Server) openCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

func TestCloseSession(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "a/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.srv.openCount(); n != 0 {
		t.Fatalf("%d sessions open after CloseSession", n)
	}
	if _, err := s.Context(ctx); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("call on a closed session: %v, want not found", err)
	}
	again, err := h.client.Open(ctx, "a/s.jsonl")
	if err != nil || again.ID != s.ID {
		t.Fatalf("reopen: %v (%+v)", err, again)
	}
}

// TestOpenSessionLimit: past server.maxOpenSessions the least recently
// used session is closed, and a call naming it reopens it.
func TestOpenSessionLimit(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxOpenSessions = 4
	h := startServer(t, cfg)
	ctx := context.Background()
	var sessions []*client.Session
	for i := range 20 {
		s, err := h.client.Create(ctx, fmt.Sprintf("s%d.jsonl", i), "/w")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, userMsg(fmt.Sprintf("m%d", i), 5)); err != nil {
			t.Fatal(err)
		}
		if n := h.srv.openCount(); n > 4 {
			t.Fatalf("%d sessions open, limit 4", n)
		}
		sessions = append(sessions, s)
	}
	// The first was closed long ago; it comes back with its content.
	c, err := sessions[0].Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 1 || !strings.Contains(string(c.Messages[0]), "m0 ") {
		t.Fatalf("reopened session context: %d messages", len(c.Messages))
	}
	if _, err := sessions[1].AppendMessages(ctx, userMsg("again", 5)); err != nil {
		t.Fatal(err)
	}
	if n := h.srv.openCount(); n > 4 {
		t.Fatalf("%d sessions open, limit 4", n)
	}
}

// TestOpenSessionLimitBusy: when every open session is in use, a new one
// is refused with ResourceExhausted instead of passing the limit.
func TestOpenSessionLimitBusy(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxOpenSessions = 2
	h := startServer(t, cfg)
	ctx := context.Background()
	for i := range 2 {
		s, err := h.client.Create(ctx, fmt.Sprintf("s%d.jsonl", i), "/w")
		if err != nil {
			t.Fatal(err)
		}
		o, err := h.srv.get(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.acquire(ctx); err != nil {
			t.Fatal(err)
		}
		defer o.release()
	}
	if _, err := h.client.Create(ctx, "s2.jsonl", "/w"); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("open past the limit with every session busy: %v, want resource exhausted", err)
	}
}

// TestIdleSessionsClosed: a session no call used for server.idleTimeout is
// closed, and comes back on the next call.
func TestIdleSessionsClosed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.IdleTimeout = 500 * time.Millisecond
	h := startServer(t, cfg)
	ctx := context.Background()
	s, err := h.client.Create(ctx, "idle.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	// The bound only keeps a broken janitor from hanging the test.
	for limit := time.Now().Add(30 * time.Second); h.srv.openCount() > 0; {
		if time.Now().After(limit) {
			t.Fatal("the idle session was never closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.AppendMessages(ctx, userMsg("back", 3)); err != nil {
		t.Fatalf("call after an idle close: %v", err)
	}
}

// TestAppendLimits: an append over server.maxAppendBytes, or one that
// would take the file past server.maxSessionBytes, is ResourceExhausted and
// writes nothing.
func TestAppendLimits(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	cfg.Server.MaxAppendBytes = 4000
	h := startServer(t, cfg)
	ctx := context.Background()
	s, err := h.client.Create(ctx, "big.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "big.jsonl")
	size := func() int64 {
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	if _, err := s.AppendMessages(ctx, userMsg("huge", 2000)); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("append over maxAppendBytes: %v, want resource exhausted", err)
	}
	if _, err := s.AfterTurn(ctx, assistantMsg("huge", 2000)); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("after turn over maxAppendBytes: %v, want resource exhausted", err)
	}
	// Past the transport's limit (maxAppendBytes, at least 4 MiB, plus
	// 1 MiB): refused before the daemon holds it all.
	if _, err := s.AppendMessages(ctx, userMsg("transport", 6<<20/4)); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("append past the transport limit: %v, want resource exhausted", err)
	}
	if size() != before {
		t.Fatal("a refused append changed the file")
	}
	// Now the session limit: room for one small append, not two.
	next := cfg.Clone()
	next.Server.MaxSessionBytes = int(before) + 1500
	h.srv.cfg.Store(next)
	if _, err := s.AppendMessages(ctx, userMsg("small", 100)); err != nil {
		t.Fatal(err)
	}
	mid := size()
	if _, err := s.AppendMessages(ctx, userMsg("small", 200)); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("append past maxSessionBytes: %v, want resource exhausted", err)
	}
	if size() != mid {
		t.Fatal("a refused append changed the file")
	}
	// A file already over the limit is not opened.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	next = next.Clone()
	next.Server.MaxSessionBytes = int(mid) - 1
	h.srv.cfg.Store(next)
	if _, err := h.client.Open(ctx, "big.jsonl"); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("open of a file over maxSessionBytes: %v, want resource exhausted", err)
	}
}

// TestReplacedOnDisk: a session file replaced by another program (pith
// prune, an editor) is reopened on the next call, reads and writes alike.
func TestReplacedOnDisk(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "r.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.AppendMessages(ctx, userMsg(fmt.Sprintf("m%d", i), 5)); err != nil {
			t.Fatal(err)
		}
	}
	// Keep the header and the first message only, written aside and
	// renamed over the file, as prune does.
	file := filepath.Join(root, "r.jsonl")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	tmp := file + ".new"
	if err := os.WriteFile(tmp, []byte(lines[0]+lines[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	c, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 1 {
		t.Fatalf("context after the replace: %d messages, want 1", len(c.Messages))
	}
	if _, err := s.AppendMessages(ctx, userMsg("after", 5)); err != nil {
		t.Fatalf("append after the replace: %v", err)
	}
	if c, err = s.Context(ctx); err != nil || len(c.Messages) != 2 {
		t.Fatalf("context: %v, %d messages, want 2", err, len(c.Messages))
	}
}

// TestErrorsNameNoServerPath: errors name sessions relative to the root,
// and a directory where a session should be is InvalidArgument.
func TestErrorsNameNoServerPath(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(root, "d", "dir.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d", "f.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		path   string
		create bool
		want   error
	}{
		"missing":        {"d/none.jsonl", false, client.ErrNotFound},
		"missing dir":    {"nodir/none.jsonl", false, client.ErrNotFound},
		"directory":      {"d/dir.jsonl", false, client.ErrInvalidArgument},
		"create on dir":  {"d/dir.jsonl", true, client.ErrInvalidArgument},
		"bad name":       {"../x.jsonl", false, client.ErrInvalidArgument},
		"under a file":   {"d/f.jsonl/x/y.jsonl", true, client.ErrInvalidArgument},
		"open in a file": {"d/f.jsonl/y.jsonl", false, client.ErrInvalidArgument},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			if tc.create {
				_, err = h.client.Create(ctx, tc.path, "/w")
			} else {
				_, err = h.client.Open(ctx, tc.path)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), root) {
				t.Fatalf("the error names the server's path: %v", err)
			}
			t.Logf("%v", err)
		})
	}
}

// TestWatchedSessionStaysOpen: a session someone watches is never closed
// by the count limit.
func TestWatchedSessionStaysOpen(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxOpenSessions = 2
	h := startServer(t, cfg)
	ctx := context.Background()
	watched, err := h.client.Create(ctx, "w.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	w, err := watched.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h.srv.mu.Lock()
	before := h.srv.sessions[watched.ID]
	h.srv.mu.Unlock()
	for i := range 6 {
		if _, err := h.client.Create(ctx, fmt.Sprintf("s%d.jsonl", i), "/w"); err != nil {
			t.Fatal(err)
		}
	}
	h.srv.mu.Lock()
	after := h.srv.sessions[watched.ID]
	h.srv.mu.Unlock()
	if after == nil || after != before {
		t.Fatal("the watched session was closed by the limit")
	}
}

// TestHardLinkNeverWritten: a session file with a second name (a hard
// link, perhaps outside the root) is read but never written.
func TestHardLinkNeverWritten(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "h.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "h.jsonl"), filepath.Join(base, "elsewhere.jsonl")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(base, "elsewhere.jsonl"))
	s, err = h.client.Open(ctx, "h.jsonl")
	if err != nil {
		t.Fatalf("reading a hard-linked session: %v", err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("x", 3)); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("append to a hard-linked file: %v, want permission denied", err)
	}
	if after, _ := os.ReadFile(filepath.Join(base, "elsewhere.jsonl")); string(after) != string(before) {
		t.Fatal("a hard-linked file was written")
	}
}
