package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
)

// TestNavigateLabelWithinLimits: a Navigate's label is written to the
// session as a label entry, so it obeys server.maxAppendBytes and
// server.maxSessionBytes as an Append does. Before, Navigate never asked
// the size check: a 1 MB label went into a session whose limits were
// 64 KB a call and 256 KB in all, and repeated calls grew the file
// without bound (up to the transport's message limit each).
func TestNavigateLabelWithinLimits(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	cfg.Server.MaxAppendBytes = 64 << 10
	cfg.Server.MaxSessionBytes = 256 << 10
	h := startServer(t, cfg)
	ctx := context.Background()
	s, err := h.client.Create(ctx, "nav.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := s.AppendMessages(ctx, userMsg("q", 20), assistantMsg("a", 20), userMsg("q2", 20), assistantMsg("a2", 20))
	if err != nil {
		t.Fatal(err)
	}
	// Two answers to navigate between: the leaf moves on every call.
	var target, other struct{ ID string }
	if err := json.Unmarshal(entries[1], &target); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(entries[3], &other); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "nav.jsonl")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	// Over the per-call limit.
	_, err = s.Navigate(ctx, other.ID, client.NavigateOptions{Label: strings.Repeat("L", 1<<20), NoSummarize: true})
	if !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("a 1 MB label with maxAppendBytes 64 KB: %v, want ResourceExhausted", err)
	}
	// Within the per-call limit each time, but past the session's.
	var refused error
	for i := 0; i < 8 && refused == nil; i++ {
		to := target.ID
		if i%2 == 1 {
			to = other.ID
		}
		_, refused = s.Navigate(ctx, to, client.NavigateOptions{Label: strings.Repeat("M", 60<<10), NoSummarize: true})
	}
	if !errors.Is(refused, client.ErrResourceExhausted) {
		t.Fatalf("labels past maxSessionBytes: %v, want ResourceExhausted", refused)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() > int64(cfg.Server.MaxSessionBytes) {
		t.Fatalf("the session grew from %d to %d bytes, over server.maxSessionBytes (%d)", before.Size(), after.Size(), cfg.Server.MaxSessionBytes)
	}
	// A label within the limits still goes in.
	if _, err := s.Navigate(ctx, other.ID, client.NavigateOptions{Label: "checkpoint", NoSummarize: true}); err != nil {
		t.Fatalf("a small label: %v", err)
	}
}

// TestCreateCwdWithinLimits: the cwd of a session created by OpenSession
// is written into its header, so it obeys server.maxAppendBytes and
// server.maxSessionBytes as an append does. Before, a 1 MB cwd created a
// 1 MB file under limits of 64 KB a call and 256 KB a session — a file
// the daemon then refused to open.
func TestCreateCwdWithinLimits(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	cfg.Server.MaxAppendBytes = 64 << 10
	cfg.Server.MaxSessionBytes = 256 << 10
	h := startServer(t, cfg)
	ctx := context.Background()
	_, err := h.client.Create(ctx, "big-cwd.jsonl", "/"+strings.Repeat("d", 1<<20))
	if !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("a 1 MB cwd: %v, want ResourceExhausted", err)
	}
	if _, err := os.Stat(filepath.Join(root, "big-cwd.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused session was written: %v", err)
	}
	if _, err := h.client.Create(ctx, "ok.jsonl", "/work/project"); err != nil {
		t.Fatalf("an ordinary cwd: %v", err)
	}
}
