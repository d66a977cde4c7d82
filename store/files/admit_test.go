package files_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

var errOver = errors.New("over the bound")

// bound is an Options.Admit whose limit a test moves, as a reload does.
type bound struct{ limit atomic.Int64 }

func (b *bound) admit(size int64) error {
	if size > b.limit.Load() {
		return fmt.Errorf("%w: %d bytes, limit %d", errOver, size, b.limit.Load())
	}
	return nil
}

// reads records the furthest byte any read of the session file reached.
type reads struct{ furthest atomic.Int64 }

func (r *reads) wrap(inner files.FS) files.FS { return readFS{inner, r} }

type readFS struct {
	files.FS
	r *reads
}

func (f readFS) OpenFile(name string, flag int, perm os.FileMode) (files.Handle, error) {
	h, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".jsonl") {
		return h, err
	}
	return readHandle{h, f.r}, nil
}

type readHandle struct {
	files.Handle
	r *reads
}

func (h readHandle) ReadAt(p []byte, off int64) (int, error) {
	n, err := h.Handle.ReadAt(p, off)
	for end := off + int64(n); ; {
		cur := h.r.furthest.Load()
		if end <= cur || h.r.furthest.CompareAndSwap(cur, end) {
			break
		}
	}
	return n, err
}

// otherLine is an entry as pi appends it.
func otherLine(id, parent string, n int) string {
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":%q}}`+"\n", id, parent, strings.Repeat("x", n))
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// boundSession is a session of two entries with Admit and the reads
// recorded; the bound starts without a limit.
func boundSession(t *testing.T) (st *files.Session, path string, b *bound, r *reads) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "s.jsonl")
	b, r = &bound{}, &reads{}
	b.limit.Store(1 << 40)
	st, err := files.Create(path, "/w", files.Options{Admit: b.admit, WrapFS: r.wrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Append(userDraft("one"), userDraft("two")); err != nil {
		t.Fatal(err)
	}
	return st, path, b, r
}

func userDraft(text string) session.Draft {
	return session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": "user", "content": text}}}
}

// TestAdmitRefusesAnotherWritersAppendUnread: lines another writer
// appends past the bound are refused by Refresh and by an append's
// catch-up before a byte of them is read; the view stays as it was, the
// file is not touched, and once the bound is raised they are read.
func TestAdmitRefusesAnotherWritersAppendUnread(t *testing.T) {
	st, path, b, r := boundSession(t)
	before := fileSize(t, path)
	file, leaf := st.File(), st.Leaf()
	b.limit.Store(before + 100)
	appendRaw(t, path, otherLine("aaaa0001", leaf.ID, 4000))
	grown := fileSize(t, path)
	r.furthest.Store(0)

	if _, err := st.Refresh(); !errors.Is(err, errOver) {
		t.Fatalf("Refresh past the bound: %v, want the Admit's refusal", err)
	}
	if _, err := st.Append(userDraft("three")); !errors.Is(err, errOver) || !errors.Is(err, session.ErrUnchanged) {
		t.Fatalf("Append behind lines past the bound: %v, want the refusal, unchanged", err)
	}
	if got := r.furthest.Load(); got > before {
		t.Fatalf("a read reached byte %d, past the %d bytes read before the other writer's", got, before)
	}
	if st.File() != file || len(file.Entries) != 2 || st.Leaf() != leaf {
		t.Fatalf("the view changed: %d entries, leaf %v", len(st.File().Entries), st.Leaf())
	}
	if got := fileSize(t, path); got != grown {
		t.Fatalf("the file is %d bytes, was %d: a refused read touched it", got, grown)
	}

	b.limit.Store(grown)
	moved, err := st.Refresh()
	if err != nil || !moved {
		t.Fatalf("Refresh with the bound raised: moved %v, %v", moved, err)
	}
	if n := len(st.File().Entries); n != 3 || st.Leaf().ID != "aaaa0001" {
		t.Fatalf("after the raise: %d entries, leaf %s; want 3, aaaa0001", n, st.Leaf().ID)
	}
}

// TestAdmitAfterTheFileIsCutBack: a file grown past the bound and cut
// back to what the Session read is read again as it was.
func TestAdmitAfterTheFileIsCutBack(t *testing.T) {
	st, path, b, _ := boundSession(t)
	before := fileSize(t, path)
	b.limit.Store(before + 10)
	appendRaw(t, path, otherLine("aaaa0001", st.Leaf().ID, 100))
	if _, err := st.Refresh(); !errors.Is(err, errOver) {
		t.Fatalf("Refresh past the bound: %v", err)
	}
	if err := os.Truncate(path, before); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Refresh(); err != nil {
		t.Fatalf("Refresh of the file cut back: %v", err)
	}
	if _, err := st.Append(userDraft("three")); err != nil {
		t.Fatalf("Append after the cut: %v", err)
	}
	if n := len(st.File().Entries); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
}

// TestAdmitTornAppendAtTheBound: another writer's line caught halfway,
// ending right at the bound, is admitted and left out of the view as any
// unfinished line is; its rest, past the bound, is refused unread.
func TestAdmitTornAppendAtTheBound(t *testing.T) {
	st, path, b, r := boundSession(t)
	before := fileSize(t, path)
	line := otherLine("aaaa0001", st.Leaf().ID, 200)
	half := len(line) / 2
	b.limit.Store(before + int64(half))
	appendRaw(t, path, line[:half])
	if _, err := st.Refresh(); err != nil {
		t.Fatalf("Refresh of a torn line ending at the bound: %v", err)
	}
	if n := len(st.File().Entries); n != 2 || !st.File().TornTail {
		t.Fatalf("%d entries, torn tail %v; want 2, true", n, st.File().TornTail)
	}
	appendRaw(t, path, line[half:])
	r.furthest.Store(0)
	if _, err := st.Refresh(); !errors.Is(err, errOver) {
		t.Fatalf("Refresh of the line finished past the bound: %v", err)
	}
	if got := r.furthest.Load(); got > before+int64(half) {
		t.Fatalf("a read reached byte %d, past the bound %d", got, before+int64(half))
	}
	if n := len(st.File().Entries); n != 2 {
		t.Fatalf("%d entries after the refusal, want 2", n)
	}
	// Exactly at the bound, whole, it is read.
	b.limit.Store(fileSize(t, path))
	if _, err := st.Refresh(); err != nil {
		t.Fatal(err)
	}
	if n := len(st.File().Entries); n != 3 || st.File().TornTail {
		t.Fatalf("%d entries, torn tail %v; want 3, false", n, st.File().TornTail)
	}
}

// TestAdmitRefusesAnOpenUnread: a file over the bound is not opened, nor
// loaded, and none of it is read.
func TestAdmitRefusesAnOpenUnread(t *testing.T) {
	_, path, _, _ := boundSession(t)
	b, r := &bound{}, &reads{}
	b.limit.Store(fileSize(t, path) - 1)
	if _, err := files.Open(path, files.Options{Admit: b.admit, WrapFS: r.wrap}); !errors.Is(err, errOver) {
		t.Fatalf("Open over the bound: %v", err)
	}
	if got := r.furthest.Load(); got != 0 {
		t.Fatalf("the refused open read %d bytes", got)
	}
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := files.LoadIn(root, filepath.Base(path), b.admit); !errors.Is(err, errOver) {
		t.Fatalf("LoadIn over the bound: %v", err)
	}
	b.limit.Store(fileSize(t, path))
	if _, err := files.LoadIn(root, filepath.Base(path), b.admit); err != nil {
		t.Fatalf("LoadIn at the bound: %v", err)
	}
}
