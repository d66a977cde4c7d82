package served

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/session"
)

func line(id, parent string, n int) string {
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":%q}}`+"\n", id, parent, strings.Repeat("x", n))
}

func accept(session.Backend) error { return nil }

// TestFilesHoldSessionsToTheBound: a session file another writer grows
// past the bound is refused at its next reading, with ErrLimit and the
// daemon's wording, and the handle keeps the entries it had; a smaller
// file renamed over it (a prune) is read again, and so is the grown one
// once the bound is raised. An open and a Load of a file over the bound
// are refused the same way.
func TestFilesHoldSessionsToTheBound(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	first := header + line("aaaa0001", "", 100)
	if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	var limit atomic.Int64
	limit.Store(int64(len(first)) + 300)
	f := NewFiles(func() string { return root }, func() bool { return false }, limit.Load, hclog.NewNullLogger())
	defer f.Close()
	ctx := context.Background()
	open := func(key any, size int64) (bool, error) { return false, nil }
	b, _, err := f.Open(ctx, "s.jsonl", false, "", open)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	file := b.Handle().File()

	f2, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f2.WriteString(line("aaaa0002", "aaaa0001", 1000)); err != nil {
		t.Fatal(err)
	}
	f2.Close()
	grown, _ := os.Stat(path)
	if !b.Stale() {
		t.Fatal("not stale with another writer's lines past the bound")
	}
	_, _, err = b.Reopen(accept)
	want := fmt.Sprintf("limit reached: session file is %d bytes, over server.maxSessionBytes (%d)", grown.Size(), limit.Load())
	if !errors.Is(err, ErrLimit) || err == nil || err.Error() != want {
		t.Fatalf("Reopen past the bound: %v, want %q", err, want)
	}
	if b.Handle().File() != file || len(file.Entries) != 1 {
		t.Fatal("the refused reading changed the handle's view")
	}

	// The open of the same file is refused too, before it is parsed.
	if _, _, err := f.Open(ctx, "s.jsonl", false, "", open); !errors.Is(err, ErrLimit) {
		t.Fatalf("an open of the file over the bound: %v", err)
	}
	if _, err := f.Load(ctx, "s.jsonl", limit.Load()); !errors.Is(err, ErrLimit) || !strings.HasSuffix(err.Error(), fmt.Sprintf("over server.maxSessionBytes (%d)", limit.Load())) {
		t.Fatalf("Load over the bound: %v", err)
	}

	// A prune renames a smaller file over it: read again.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(header+line("bbbb0001", "", 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	done, how, err := b.Reopen(accept)
	if err != nil || done == nil || !how.Fresh {
		t.Fatalf("Reopen of the smaller file: fresh %v, %v", how.Fresh, err)
	}
	done()
	if got := b.Handle().File().Entries; len(got) != 1 || got[0].ID != "bbbb0001" {
		t.Fatalf("after the prune: %d entries", len(got))
	}

	// Grown past it again, then the bound raised.
	f3, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f3.WriteString(line("bbbb0002", "bbbb0001", 2000)); err != nil {
		t.Fatal(err)
	}
	f3.Close()
	if _, _, err := b.Reopen(accept); !errors.Is(err, ErrLimit) {
		t.Fatalf("Reopen past the bound again: %v", err)
	}
	limit.Store(1 << 20)
	if _, _, err := b.Reopen(accept); err != nil {
		t.Fatalf("Reopen with the bound raised: %v", err)
	}
	if n := len(b.Handle().File().Entries); n != 2 {
		t.Fatalf("%d entries after the raise, want 2", n)
	}
}
