package files_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// The intent sidecar's lifecycle: kept while the session is appended to,
// removed by a rewrite (its record can only name the replaced file), and
// removed when its session is gone.

func sidecarOf(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".append")
}

func appendOne(t *testing.T, s *files.Session, kind string) {
	t.Helper()
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": kind}}); err != nil {
		t.Fatal(err)
	}
}

func TestIntentSidecarRemovedByRewrite(t *testing.T) {
	path := newSession(t, t.TempDir(), 3)
	a, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	appendOne(t, a, "a")
	appendOne(t, b, "b") // b holds the sidecar open now
	if _, err := os.Stat(sidecarOf(path)); err != nil {
		t.Fatalf("no sidecar after an append: %v", err)
	}
	if err := rewriteSame(a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sidecarOf(path)); !os.IsNotExist(err) {
		t.Fatalf("the sidecar outlived the rewrite: %v", err)
	}
	// b finds the file replaced and records its next append in a sidecar
	// by the name again, not in the removed one it had open.
	appendOne(t, b, "b2")
	rec, err := os.ReadFile(sidecarOf(path))
	if err != nil {
		t.Fatalf("b's append left no sidecar: %v", err)
	}
	if !bytes.HasPrefix(rec, []byte("pithapnd")) {
		t.Fatalf("b's record is not in the sidecar: %q", rec)
	}
	// And a torn append after all this is still undone by the next writer.
	orig := mustRead(t, path)
	if err := files.SimulateTornAppend(path, tornLine(), 4096); err != nil {
		t.Fatal(err)
	}
	appendOne(t, a, "after")
	onlyWholeLinesAfter(t, mustRead(t, path), orig, 1)
}

func TestOrphanIntentSidecarRemovedByRewrite(t *testing.T) {
	dir := t.TempDir()
	path := newSession(t, dir, 3)
	other := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(other, mustRead(t, path), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := append([]byte("pithapnd"), make([]byte, 24)...)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := write(".gone.jsonl.append", rec)
	live := write(".other.jsonl.append", rec)
	foreign := write(".notes.append", bytes.Repeat([]byte("x"), 100)) // not a record
	// Small enough to be a record, but not one: a file of the user's.
	small := write(".todo.append", []byte("buy milk\n"))
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := rewriteSame(s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("the sidecar of a session that is gone was kept: %v", err)
	}
	for _, p := range []string{live, foreign, small} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
