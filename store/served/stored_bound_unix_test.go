//go:build unix

package served

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/store/storetest"
)

// TestStoredLoadOverTheBoundUnread: the propose mode's read-only Load of
// a stored session over the bound is refused as Files.Load refuses a
// file (ErrLimit, "session … is N bytes"), before the session is read: a
// sparse file of gigabytes behind a files store leaves the heap as it
// was. Before, the whole session was read and parsed, then refused.
func TestStoredLoadOverTheBoundUnread(t *testing.T) {
	const limit, huge = 512 << 20, 4 << 30
	dir := t.TempDir()
	st, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := NewStored(st, StoredOptions{Bound: func() int64 { return limit }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	first := header + line("aaaa0001", "", 100)
	if err := st.Create(ctx, "huge.jsonl", []byte(first)); err != nil {
		t.Fatal(err)
	}
	if f, err := s.Load(ctx, "huge.jsonl", limit); err != nil || len(f.Entries) != 1 {
		t.Fatalf("Load within the bound: %v", err)
	}
	if _, err := s.Load(ctx, "huge.jsonl", int64(len(first))-1); !errors.Is(err, ErrLimit) {
		t.Fatalf("Load a byte over the bound: %v, want ErrLimit", err)
	}

	path := filepath.Join(dir, "huge.jsonl")
	storetest.GrowSparse(t, path, huge)
	used := storetest.Allocated(func() { _, err = s.Load(ctx, "huge.jsonl", limit) })
	want := `limit reached: session "huge.jsonl" is 4294967296 bytes, over server.maxSessionBytes (536870912)`
	if !errors.Is(err, ErrLimit) || err.Error() != want {
		t.Fatalf("Load of the grown session: %v, want %q", err, want)
	}
	if used > 64<<20 {
		t.Fatalf("refusing to load a %d-byte session allocated %d bytes", huge, used)
	}
}
