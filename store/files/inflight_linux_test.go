package files_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/internal/faultfs"
	"github.com/pith-dev/pith/store/files"
)

// TestRewriteWaitsForAnAppendInFlight: pi opens the file before the
// rename and writes into it only after the rewrite copied the old file's
// late bytes (an overloaded machine can stop pi between open and write
// for many milliseconds). The old file has no name any more; the rewrite
// waits until nobody has it open and copies the line then.
func TestRewriteWaitsForAnAppendInFlight(t *testing.T) {
	defer files.SetDrainWait(time.Hour)()
	path := newSession(t, t.TempDir(), 10)
	done := make(chan error, 1)
	c := faultfs.New()
	c.Before = func(op faultfs.Op, n int) {
		if op != faultfs.Rename {
			return
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer f.Close()
			// Write only once the name leads to the new file.
			for {
				a, err1 := f.Stat()
				b, err2 := os.Stat(path)
				if err1 != nil || err2 != nil {
					done <- err1
					return
				}
				if !os.SameFile(a, b) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			_, err := f.WriteString(piLine)
			done <- err
		}()
	}
	s, err := files.Open(path, files.Options{WrapFS: c.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	err = rewriteSame(s)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkWhole(t, path, "half", 11)
}

// TestRewriteNeverSplitsALineAroundAnother: pi's line is half visible in
// the old file when the rewrite copies before the rename; after the
// rename another pi process appends straight to the new file, and only
// then does the first line's rest arrive. Copying the half early would
// put the other line between the halves and spoil both.
func TestRewriteNeverSplitsALineAroundAnother(t *testing.T) {
	defer files.SetDrainWait(time.Hour)()
	path := newSession(t, t.TempDir(), 10)
	const cut = 40
	other := strings.Replace(piLine, `"half"`, `"other"`, 1)
	done := make(chan error, 1)
	c := faultfs.New()
	c.Before = func(op faultfs.Op, n int) {
		if op != faultfs.Sync || n != 1 { // the temp file's first fsync
			return
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(piLine[:cut]); err != nil {
			t.Fatal(err)
		}
		go func() {
			defer f.Close()
			for {
				a, err1 := f.Stat()
				b, err2 := os.Stat(path)
				if err1 != nil || err2 != nil {
					done <- err1
					return
				}
				if !os.SameFile(a, b) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			g, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				done <- err
				return
			}
			_, err = g.WriteString(other)
			g.Close()
			if err == nil {
				_, err = f.WriteString(piLine[cut:])
			}
			done <- err
		}()
	}
	s, err := files.Open(path, files.Options{WrapFS: c.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	err = rewriteSame(s)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	checkWhole(t, path, "half", 12)
	checkWhole(t, path, "other", 12)
}
