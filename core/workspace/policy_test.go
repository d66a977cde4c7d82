package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Within opens only workspaces under its root, however the cwd names a
// place outside it; None and an empty root open none.
func TestWithin(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "team", "proj"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "team", "proj", "f.txt"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "f.txt"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "team", "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("proj", filepath.Join(root, "team", "alias")); err != nil {
		t.Fatal(err)
	}
	open := Within(root)
	for _, cwd := range []string{root, filepath.Join(root, "team", "proj"), filepath.Join(root, "team", "alias"), filepath.Join(root, "team", "..", "team", "proj")} {
		w, err := open(cwd, Options{})
		if err != nil {
			t.Fatalf("%s: %v", cwd, err)
		}
		w.Close()
	}
	w, err := open(filepath.Join(root, "team", "alias"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := w.Read("f.txt", ReadOptions{}); err != nil || f.Content != "inside\n" {
		t.Fatalf("read through a link inside the root: %+v, %v", f, err)
	}
	w.Close()
	for _, cwd := range []string{outside, filepath.Join(root, ".."), filepath.Join(root, "..", "outside"), filepath.Join(root, "team", "out"), root + "x", "/", "team/proj", filepath.Join(root, "missing")} {
		if w, err := open(cwd, Options{}); err == nil {
			w.Close()
			t.Errorf("%s opened under the root %s", cwd, root)
		}
	}
	for _, o := range []Opener{None, Within("")} {
		if _, err := o(root, Options{}); !errors.Is(err, ErrNoWorkspaces) {
			t.Errorf("got %v, want ErrNoWorkspaces", err)
		}
	}
}

// RealDir is the directory a workspace has open by its path with links
// resolved, whatever its cwd named.
func TestRealDir(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "proj")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("proj", filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	w, err := Within(base)(filepath.Join(base, "alias"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, err := w.RealDir(); err != nil || got != real {
		t.Fatalf("RealDir = %q, %v; want %q", got, err, real)
	}
}
