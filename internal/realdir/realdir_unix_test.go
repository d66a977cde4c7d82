//go:build unix

package realdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func openRoot(t *testing.T) (*os.Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

func TestMkdirAll(t *testing.T) {
	r, dir := openRoot(t)
	fi, err := MkdirAll(r, "a/b/c", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(filepath.Join(dir, "a/b/c"))
	if err != nil || !os.SameFile(fi, want) {
		t.Fatalf("ended in %v, want a/b/c (%v)", fi, err)
	}
	// Again: everything exists.
	if fi, err := MkdirAll(r, "a/b/c", 0o755); err != nil || !os.SameFile(fi, want) {
		t.Fatalf("second MkdirAll: %v", err)
	}
	if _, err := Stat(r, "a/x"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat of a missing directory: %v", err)
	}
	if _, err := MkdirAll(r, "a/../b", 0o755); err == nil {
		t.Fatal(`".." was walked`)
	}
}

// TestMkdirAllRefusesLinks: a symlink or a file where a directory should
// be is refused, and nothing is made through the link — os.Root's MkdirAll
// follows a link that stays inside the root.
func TestMkdirAllRefusesLinks(t *testing.T) {
	r, dir := openRoot(t)
	os.Mkdir(filepath.Join(dir, "b"), 0o755)
	os.Symlink("b", filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	if _, err := MkdirAll(r, "link/x", 0o755); !errors.Is(err, ErrSymlink) {
		t.Fatalf("through a link: %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b/x")); err == nil {
		t.Fatal("a directory was made through the link")
	}
	if _, err := MkdirAll(r, "file/x", 0o755); !errors.Is(err, ErrNotDir) {
		t.Fatalf("through a file: %v, want ErrNotDir", err)
	}
	if _, err := Stat(r, "link"); !errors.Is(err, ErrSymlink) {
		t.Fatalf("Stat of a link: %v, want ErrSymlink", err)
	}
}

// TestMkdirAllSwap: a directory the walk has reached and then swapped for
// a link (moved away, a link to another directory in its place) is not
// followed — the walk goes on in the directory it reached, so the next
// one is made there and nothing in the link's target.
func TestMkdirAllSwap(t *testing.T) {
	r, dir := openRoot(t)
	os.Mkdir(filepath.Join(dir, "other"), 0o755)
	afterStep = func(done string) {
		if done == "a" {
			os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "a.moved"))
			os.Symlink("other", filepath.Join(dir, "a"))
		}
	}
	defer func() { afterStep = nil }()
	fi, err := MkdirAll(r, "a/b", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "other/b")); err == nil {
		t.Fatal("the walk followed the swapped-in link")
	}
	want, err := os.Stat(filepath.Join(dir, "a.moved/b"))
	if err != nil || !os.SameFile(fi, want) {
		t.Fatalf("ended in %v, want the directory the walk reached (%v)", fi, err)
	}
}
