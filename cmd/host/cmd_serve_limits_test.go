package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// procFDs counts the open file descriptors of pid.
func procFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	return len(ents)
}

// procMemKB reads VmRSS and VmHWM (peak RSS) of pid in kB.
func procMemKB(pid int) (rss, peak int) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			peak = n
		}
	}
	return rss, peak
}

// TestServeOpenSessionLimit: OpenSession(create) over and over against a
// real `pith serve` keeps its open files within server.maxOpenSessions —
// 300 calls here, 20 000 with PITH_HEAVY=1 (fds and RSS in the log). Every
// session closed on the way is reopened transparently when named again.
func TestServeOpenSessionLimit(t *testing.T) {
	calls, limit := 300, 16
	if os.Getenv("PITH_HEAVY") == "1" {
		calls, limit = 20000, 256
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, map[string]any{
		"sessions": map[string]any{"root": "sessions"},
		"server":   map[string]any{"shutdownTimeout": "5s", "maxOpenSessions": limit},
	})
	p := startServe(t, cfgPath)
	pid := p.cmd.Process.Pid
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	base := procFDs(t, pid)
	maxFDs := base
	// victim is closed by the limit on the way (limit more are opened
	// after it), and named again at the end.
	var victim *client.Session
	for i := range calls {
		s, err := c.Create(ctx, fmt.Sprintf("load/%03d/s%d.jsonl", i%100, i), "/w")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i == calls-limit-10 {
			victim = s
		}
		if i%50 == 0 {
			maxFDs = max(maxFDs, procFDs(t, pid))
		}
	}
	maxFDs = max(maxFDs, procFDs(t, pid))
	rss, peak := procMemKB(pid)
	t.Logf("%d OpenSession(create) calls, maxOpenSessions %d: fds %d at start, at most %d; RSS %d kB, peak %d kB", calls, limit, base, maxFDs, rss, peak)
	// Each open session holds its file and its directory; the rest is
	// the daemon's own (listeners, connections, the config watcher).
	if maxFDs > base+2*limit+16 {
		t.Errorf("%d file descriptors open, more than the limit of %d sessions allows (base %d)", maxFDs, limit, base)
	}
	// The victim was closed by the limit; naming it reopens it.
	if _, err := victim.AppendMessages(ctx, serveMessage("user", "back", 3)); err != nil {
		t.Fatalf("append to a session closed by the limit: %v", err)
	}
}

// TestServeResources: CloseSession, the size limits and a file replaced
// on disk by another program, through a real `pith serve`.
func TestServeResources(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, map[string]any{
		"sessions": map[string]any{"root": "sessions"},
		"server":   map[string]any{"shutdownTimeout": "5s", "maxAppendBytes": 8192, "maxSessionBytes": 65536},
	})
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s, err := c.Create(ctx, "r/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "sessions", "r", "s.jsonl")
	size := func() int64 {
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	// Over maxAppendBytes: refused, nothing written.
	before := size()
	if _, err := s.AppendMessages(ctx, serveMessage("user", "big", 3000)); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("append over maxAppendBytes: %v, want resource exhausted", err)
	}
	if size() != before {
		t.Fatal("a refused append changed the file")
	}
	// Up to maxSessionBytes, then refused.
	var refused error
	for i := 0; i < 100 && refused == nil; i++ {
		_, refused = s.AppendMessages(ctx, serveMessage("user", fmt.Sprintf("m%d", i), 1000))
	}
	if !errors.Is(refused, client.ErrResourceExhausted) {
		t.Fatalf("appends past maxSessionBytes: %v, want resource exhausted", refused)
	}
	if size() > 65536 {
		t.Fatalf("the file grew to %d bytes, past maxSessionBytes", size())
	}

	// Another program rewrites the file (as pith prune does, through the
	// session package's write protocol): the daemon's next calls see it.
	store, err := files.Open(file, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = store.Update(func(tx *session.Tx) (*session.File, error) {
		f := *tx.File()
		f.Entries = f.Entries[:1]
		return &f, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	ctxv, err := s.Context(ctx)
	if err != nil {
		t.Fatalf("context after the file was replaced: %v", err)
	}
	if len(ctxv.Messages) != 1 {
		t.Fatalf("context after the replace: %d messages, want 1", len(ctxv.Messages))
	}
	if _, err := s.AppendMessages(ctx, serveMessage("user", "after", 5)); err != nil {
		t.Fatalf("append after the replace: %v", err)
	}

	// CloseSession: later calls are NotFound until it is opened again.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Context(ctx); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("call after CloseSession: %v, want not found", err)
	}
	if _, err := c.Open(ctx, "r/s.jsonl"); err != nil {
		t.Fatal(err)
	}

	// Error hygiene: a directory is InvalidArgument, a missing file
	// NotFound, and neither names the server's paths.
	if err := os.Mkdir(filepath.Join(dir, "sessions", "r", "d.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]error{"r/d.jsonl": client.ErrInvalidArgument, "r/none.jsonl": client.ErrNotFound, "/etc/passwd": client.ErrInvalidArgument} {
		_, err := c.Open(ctx, name)
		if !errors.Is(err, want) {
			t.Errorf("open %s: %v, want %v", name, err, want)
		}
		if err != nil && strings.Contains(err.Error(), dir) {
			t.Errorf("open %s: the error names the server's path: %v", name, err)
		}
	}
}
