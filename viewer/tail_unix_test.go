//go:build unix

package viewer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/internal/regularfile"
	"github.com/pith-dev/pith/internal/regularfile/regularfiletest"
)

// TestFIFORefused: a FIFO named as the session is refused at once, not
// opened (which would block until a writer comes).
func TestFIFORefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	if h, err := New(Options{Path: path}); err == nil {
		h.Close()
		t.Fatal("a FIFO was shown as a session")
	}
	tail := FileTail(func() (*os.File, error) { return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) }, nil)
	if _, _, err := tail(0); err == nil {
		t.Fatal("FileTail read a FIFO")
	}
}

// TestOpenRegularRefuses: OpenRegular, the viewer New and a FileTail over
// it refuse a FIFO, a directory and a device named as the session (also
// through a symlink, which the viewer follows) at once, with an error
// naming the path.
func TestOpenRegularRefuses(t *testing.T) {
	for _, kind := range regularfiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.jsonl")
			regularfiletest.MustMake(t, kind, path)
			link := filepath.Join(dir, "link.jsonl")
			if err := os.Symlink(path, link); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, link} {
				err := regularfiletest.NoHang(t, "OpenRegular", func() error {
					f, err := OpenRegular(p)
					if err == nil {
						f.Close()
					}
					return err
				})
				if !errors.Is(err, regularfile.ErrNotRegular) || !strings.HasPrefix(err.Error(), p+" is not a regular file") {
					t.Fatalf("OpenRegular(%s): %v", p, err)
				}
				err = regularfiletest.NoHang(t, "New", func() error {
					h, err := New(Options{Path: p})
					if err == nil {
						h.Close()
					}
					return err
				})
				if !errors.Is(err, regularfile.ErrNotRegular) {
					t.Fatalf("New(%s): %v", p, err)
				}
			}
		})
	}
}

// TestOpenRegularSwapRefused: the path is a regular file when checked by
// name and a FIFO, a directory or a device when opened. The check by name
// is the seam: it answers for the regular file, then swaps it. Checked
// by name alone, the open would hand the swapped-in file to the reader.
func TestOpenRegularSwapRefused(t *testing.T) {
	for _, kind := range regularfiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, []byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			swapped := false
			stat := func(name string) (fs.FileInfo, error) {
				fi, err := os.Stat(name)
				if err != nil || swapped {
					return fi, err
				}
				swapped = true
				ok, err := regularfiletest.Replace(kind, name)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					t.Skipf("cannot make a %s here", kind)
				}
				return fi, nil
			}
			err := regularfiletest.NoHang(t, "openRegular", func() error {
				f, err := openRegular(path, stat)
				if err == nil {
					f.Close()
				}
				return err
			})
			if !swapped {
				t.Fatal("the check by name was not made")
			}
			if !errors.Is(err, regularfile.ErrNotRegular) || !strings.HasPrefix(err.Error(), path+" is not a regular file") {
				t.Fatalf("the swapped-in %s: %v", kind, err)
			}
		})
	}
}
