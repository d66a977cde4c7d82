//go:build unix

package files_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/store/served"
	"github.com/pith-dev/pith/store/storetest"
)

// TestSessionOverTheBoundUnread: a stored session file of gigabytes (a
// sparse one, which takes no disk) is refused by a store.Session's open,
// catch-up and reload with the daemon's own refusal, before it is read: the heap
// does not grow by anything near the file's size. Before, the whole file
// was read into memory and only then refused.
func TestSessionOverTheBoundUnread(t *testing.T) {
	const limit, huge = 512 << 20, 4 << 30
	dir := t.TempDir()
	st, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.Create(ctx, "huge.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	// As served.Stored admits what a handle takes in.
	bound := served.SessionBound(func() int64 { return limit })
	opts := store.SessionOptions{Holder: "A", Admit: func(n int64) error { return bound.Admit("the session would hold", n) }}
	h, err := store.OpenSession(ctx, st, "huge.jsonl", opts)
	if err != nil {
		t.Fatal(err)
	}
	file := h.File()

	// Another writer grows the file far past the bound.
	path := filepath.Join(dir, "huge.jsonl")
	storetest.GrowSparse(t, path, huge)
	want := "huge.jsonl: limit reached: the session would hold 4294967296 bytes, over server.maxSessionBytes (536870912)"
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, served.ErrLimit) || err.Error() != want {
			t.Fatalf("%s: %v, want %q", what, err, want)
		}
	}
	// A catch-up reads only what follows its last line, but that is
	// gigabytes here: refused from the file's size, unread.
	used := storetest.Allocated(func() { err = h.Refresh(ctx) })
	refused("catch-up with the grown file", err)
	if used > 64<<20 {
		t.Fatalf("refusing a catch-up with a %d-byte file allocated %d bytes", huge, used)
	}
	if h.File() != file {
		t.Fatal("a refused catch-up changed the handle's view")
	}
	used = storetest.Allocated(func() { err = h.Reload(ctx) })
	refused("reload of the grown file", err)
	if used > 64<<20 {
		t.Fatalf("refusing a reload of a %d-byte file allocated %d bytes", huge, used)
	}
	if h.File() != file {
		t.Fatal("a refused reload changed the handle's view")
	}
	used = storetest.Allocated(func() { _, err = store.OpenSession(ctx, st, "huge.jsonl", opts) })
	refused("open of the grown file", err)
	if used > 64<<20 {
		t.Fatalf("refusing to open a %d-byte file allocated %d bytes", huge, used)
	}
}
