//go:build unix

package files_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/regularfile/regularfiletest"
	"github.com/pith-dev/pith/store/files"
)

// TestEveryOpenRefusesNonRegular: a FIFO, a directory and a device in the
// session's place (or its archive's) are refused by every way a session
// is opened — by path, inside a root, read-only — with ErrNotRegular and
// without waiting on the FIFO.
func TestEveryOpenRefusesNonRegular(t *testing.T) {
	for _, kind := range regularfiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.jsonl")
			regularfiletest.MustMake(t, kind, path)
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			opens := map[string]func() error{
				"Open":         func() error { _, err := files.Open(path, files.Options{}); return err },
				"OpenIn":       func() error { _, err := files.OpenIn(root, "s.jsonl", files.Options{}); return err },
				"Load":         func() error { _, err := session.Load(path); return err },
				"OpenReadOnly": func() error { _, err := files.OpenReadOnly(path); return err },
			}
			for name, open := range opens {
				if err := regularfiletest.NoHang(t, name, open); !errors.Is(err, files.ErrNotRegular) {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}

// TestSymlinkInRootRefused: inside a root the session itself must not be
// a symlink (its target could be anything, a FIFO included); by path, a
// symlink is followed to its target and the target is judged.
func TestSymlinkInRootRefused(t *testing.T) {
	dir := t.TempDir()
	target := newSession(t, dir, 1)
	if err := os.Symlink("s.jsonl", filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := files.OpenIn(root, "link.jsonl", files.Options{}); !errors.Is(err, files.ErrNotRegular) {
		t.Fatalf("a symlink opened in a root: %v", err)
	}
	s, err := files.Open(filepath.Join(dir, "link.jsonl"), files.Options{})
	if err != nil {
		t.Fatalf("a symlink to a session by path: %v", err)
	}
	s.Close()
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	regularfiletest.MustMake(t, "FIFO", target)
	if err := regularfiletest.NoHang(t, "Open through a symlink to a FIFO", func() error {
		_, err := files.Open(filepath.Join(dir, "link.jsonl"), files.Options{})
		return err
	}); !errors.Is(err, files.ErrNotRegular) {
		t.Fatalf("a symlink to a FIFO: %v", err)
	}
}

// swapFS answers Lstat for the session as the regular file it is, then
// puts kind in its place before the open that follows: the swap between
// the check by name and the open, made deterministic.
type swapFS struct {
	files.FS
	t       *testing.T
	dir     string
	kind    string
	swapped bool
}

func (s *swapFS) Lstat(name string) (fs.FileInfo, error) {
	fi, err := s.FS.Lstat(name)
	if err == nil && !s.swapped && name == "s.jsonl" {
		s.swapped = true
		ok, err := regularfiletest.Replace(s.kind, filepath.Join(s.dir, name))
		if err != nil {
			s.t.Fatal(err)
		}
		if !ok {
			s.t.Skipf("cannot make a %s here", s.kind)
		}
	}
	return fi, err
}

// TestSwapAfterCheckRefused: the file checked by name is a regular file,
// the one opened is not; the opened file is what is judged. Opening a
// directory for writing fails in the open itself (EISDIR).
func TestSwapAfterCheckRefused(t *testing.T) {
	for _, kind := range regularfiletest.Kinds {
		for _, how := range []string{"Open", "OpenIn"} {
			t.Run(kind+"/"+how, func(t *testing.T) {
				dir := t.TempDir()
				path := newSession(t, dir, 1)
				sw := &swapFS{t: t, dir: dir, kind: kind}
				opts := files.Options{WrapFS: func(f files.FS) files.FS { sw.FS = f; return sw }}
				err := regularfiletest.NoHang(t, how, func() error {
					var s *files.Session
					var err error
					if how == "Open" {
						s, err = files.Open(path, opts)
					} else {
						root, rerr := os.OpenRoot(dir)
						if rerr != nil {
							return rerr
						}
						defer root.Close()
						s, err = files.OpenIn(root, "s.jsonl", opts)
					}
					if err == nil {
						s.Close()
					}
					return err
				})
				if !sw.swapped {
					t.Fatal("the check by name was not made")
				}
				if !errors.Is(err, files.ErrNotRegular) && !(kind == "directory" && errors.Is(err, syscall.EISDIR)) {
					t.Fatalf("the swapped-in %s: %v", kind, err)
				}
			})
		}
	}
}
