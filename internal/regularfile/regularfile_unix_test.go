//go:build unix

package regularfile_test

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/internal/regularfile"
	"github.com/pith-dev/pith/internal/regularfile/regularfiletest"
)

// specials makes one of each thing that is not a regular file in dir
// and returns them by kind; a kind the system will not make is left out.
func specials(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{"device": "/dev/null"}
	for _, kind := range regularfiletest.Kinds {
		p := filepath.Join(dir, kind)
		if ok, err := regularfiletest.Make(kind, p); err != nil {
			t.Fatal(err)
		} else if ok {
			out[kind] = p
		}
	}
	sock := filepath.Join(dir, "sock")
	if l, err := net.Listen("unix", sock); err == nil {
		t.Cleanup(func() { l.Close() })
		out["socket"] = sock
	}
	return out
}

// TestRefused: with and without the check before opening, following
// symlinks or not, whatever is not a regular file is refused with an
// error naming it and what it is, and nothing hangs.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	for kind, path := range specials(t, dir) {
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			path string
			stat func(string) (fs.FileInfo, error)
			kind string
		}{
			{"stat first", path, os.Stat, kind},
			{"no stat", path, nil, kind},
			{"through a symlink", link, os.Stat, kind},
			{"symlink refused", link, os.Lstat, "symbolic link"},
		} {
			for _, flag := range []int{os.O_RDONLY, os.O_RDWR} {
				if kind == "directory" && flag == os.O_RDWR && c.stat == nil {
					continue // the open itself refuses (EISDIR), tested below
				}
				err := regularfiletest.NoHang(t, kind+" "+c.name, func() error {
					f, err := regularfile.Open(c.path, flag, 0, c.stat, os.OpenFile)
					if err == nil {
						f.Close()
					}
					return err
				})
				if err == nil {
					t.Fatalf("%s, %s: opened", kind, c.name)
				}
				if kind == "socket" && c.stat == nil {
					continue // the open itself refuses (ENXIO)
				}
				var re *regularfile.Error
				if !errors.Is(err, regularfile.ErrNotRegular) || !errors.As(err, &re) {
					t.Fatalf("%s, %s: %v", kind, c.name, err)
				}
				if want := c.path + " is not a regular file (a"; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.kind+")") {
					t.Fatalf("%s, %s: %q, want %q... %s)", kind, c.name, err, want, c.kind)
				}
			}
		}
	}
	if _, err := regularfile.Open(dir, os.O_RDWR, 0, nil, os.OpenFile); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("a directory opened for writing: %v", err)
	}
}

// TestRegular: a regular file, and a symlink to one when the caller
// follows links, is opened with the caller's flags.
func TestRegular(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := path + ".link"
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link} {
		f, err := regularfile.Open(p, os.O_RDWR|os.O_APPEND, 0, os.Stat, os.OpenFile)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("y\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if data, _ := os.ReadFile(path); string(data) != "x\ny\ny\n" {
		t.Fatalf("%q", data)
	}
	// Created by the open, with no check before it (there is nothing to
	// check yet).
	created := filepath.Join(filepath.Dir(path), "new")
	f, err := regularfile.Open(created, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640, nil, os.OpenFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(created); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("%v %v", fi, err)
	}
}

// TestSwapAfterCheck: a regular file when checked by name, something else
// when opened — the swap a check by name alone misses. The stat function
// is the seam: it answers for the regular file, then puts the other thing
// in its place before Open opens the name.
func TestSwapAfterCheck(t *testing.T) {
	for _, kind := range regularfiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.jsonl")
			if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			swapped := false
			stat := func(name string) (fs.FileInfo, error) {
				fi, err := os.Stat(name)
				if err != nil {
					return nil, err
				}
				swapped = true
				if ok, err := regularfiletest.Replace(kind, name); err != nil {
					t.Fatal(err)
				} else if !ok {
					t.Skipf("cannot make a %s here", kind)
				}
				return fi, nil
			}
			err := regularfiletest.NoHang(t, kind, func() error {
				f, err := regularfile.Open(path, os.O_RDONLY, 0, stat, os.OpenFile)
				if err == nil {
					f.Close()
				}
				return err
			})
			if !swapped {
				t.Fatal("the stat seam was not asked")
			}
			if err == nil {
				t.Fatalf("the %s swapped in was opened", kind)
			}
			if !errors.Is(err, regularfile.ErrNotRegular) || !strings.Contains(err.Error(), kind) {
				t.Fatalf("%v", err)
			}
		})
	}
}

// closeCounter is an opened file that counts its closes.
type closeCounter struct {
	*os.File
	closed *int
}

func (c closeCounter) Close() error { *c.closed++; return c.File.Close() }

// TestRefusedIsClosed: a file opened and then refused is closed; the
// errors of stat and open come back as they are.
func TestRefusedIsClosed(t *testing.T) {
	dir := t.TempDir()
	closed := 0
	open := func(name string, flag int, perm fs.FileMode) (closeCounter, error) {
		f, err := os.OpenFile(name, flag, perm)
		return closeCounter{f, &closed}, err
	}
	if _, err := regularfile.Open(dir, os.O_RDONLY, 0, nil, open); !errors.Is(err, regularfile.ErrNotRegular) || closed != 1 {
		t.Fatalf("%v, closed %d times", err, closed)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := regularfile.Open(missing, os.O_RDONLY, 0, os.Stat, open); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat: %v", err)
	}
	var pe *fs.PathError
	if _, err := regularfile.Open(missing, os.O_RDONLY, 0, nil, open); !errors.As(err, &pe) || pe.Op != "open" {
		t.Fatalf("open: %v", err)
	}
}

// TestNoBlockAdded: the caller's flags get O_NONBLOCK whatever they are,
// so no caller can forget it.
func TestNoBlockAdded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var got int
	f, err := regularfile.Open(path, os.O_RDONLY, 0, nil, func(name string, flag int, perm fs.FileMode) (*os.File, error) {
		got = flag
		return os.OpenFile(name, flag, perm)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got&syscall.O_NONBLOCK == 0 {
		t.Fatalf("flags %#x", got)
	}
}

// TestSwapForLinkAfterCheck: a regular file when checked with Lstat, a
// symlink to another regular file when opened (an os.Root follows a link
// that stays inside it) — the open must not return that other file.
func TestSwapForLinkAfterCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	other := filepath.Join(dir, "other.jsonl")
	for _, p := range []string{path, other} {
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stat := func(name string) (fs.FileInfo, error) {
		fi, err := os.Lstat(name)
		if err != nil {
			return nil, err
		}
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("other.jsonl", name); err != nil {
			t.Fatal(err)
		}
		return fi, nil
	}
	f, err := regularfile.Open(path, os.O_RDONLY, 0, stat, os.OpenFile)
	if err == nil {
		f.Close()
		t.Fatal("opened the file a link swapped in after the check leads to")
	}
	// Open checks a changed name again, and finds the link.
	if !errors.Is(err, regularfile.ErrNotRegular) {
		t.Fatalf("%v", err)
	}
}

// TestRenamedOverAfterCheck: a rewrite that renames a new regular file
// over the name between the check and the open (prune, migrate) is a
// change, but the new file is as good to open: Open checks the name again
// and opens it. Before, a pith append racing a prune failed with "changed
// while it was opened" (TestRewritesKeepConcurrentAppends in cmd/host saw
// it once in CI).
func TestRenamedOverAfterCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	next := filepath.Join(dir, ".s.jsonl.new")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(next, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	renamed := false
	stat := func(name string) (fs.FileInfo, error) {
		fi, err := os.Lstat(name)
		if err == nil && !renamed {
			renamed = true
			err = os.Rename(next, name)
		}
		return fi, err
	}
	f, err := regularfile.Open(path, os.O_RDONLY, 0, stat, os.OpenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != "new\n" {
		t.Fatalf("read %q, want the file renamed over the name", b)
	}
}

// TestOpenOrCreate: a missing file is created, an existing one opened,
// and a symlink in its place — to a file or dangling — refused, the file
// it leads to left as it was.
func TestOpenOrCreate(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, flag int, perm fs.FileMode) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), flag, perm)
	}
	lstat := func(name string) (fs.FileInfo, error) { return os.Lstat(filepath.Join(dir, name)) }
	f, created, err := regularfile.OpenOrCreate("new", os.O_RDWR, 0o644, lstat, open)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	f.Close()
	f, created, err = regularfile.OpenOrCreate("new", os.O_RDWR, 0o644, lstat, open)
	if err != nil || created {
		t.Fatalf("open: %v %v", created, err)
	}
	f.Close()
	os.WriteFile(filepath.Join(dir, "target"), []byte("keep"), 0o644)
	os.Symlink("target", filepath.Join(dir, "link"))
	os.Symlink("missing", filepath.Join(dir, "dangling"))
	for _, n := range []string{"link", "dangling"} {
		if _, _, err := regularfile.OpenOrCreate(n, os.O_RDWR, 0o644, lstat, open); !errors.Is(err, regularfile.ErrNotRegular) {
			t.Errorf("%s: %v, want ErrNotRegular", n, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing")); err == nil {
		t.Error("the dangling link's target was created")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "target")); string(b) != "keep" {
		t.Errorf("the link's target changed: %q", b)
	}
}
