package files_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/faultfs"
	"github.com/pith-dev/pith/store/files"
)

// newSession writes a v3 session of n custom entries and returns its path.
func newSession(t testing.TB, dir string, n int) string {
	t.Helper()
	path := filepath.Join(dir, "s.jsonl")
	s, err := files.Create(path, "/w", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "t", "data": i}}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// piAppend appends one line the way pi does: appendFileSync, O_APPEND, no lock.
func piAppend(t testing.TB, path, id string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := `{"type":"custom","id":"` + id + `","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"pi","data":{}}` + "\n"
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rewriteSame rewrites the session with its own content: the write
// protocol of prune and restore without their logic.
func rewriteSame(s *files.Session) error { return s.Rewrite(s.File()) }

// TestRewriteKeepsUnlockedAppendsInEveryWindow appends a pi-style line
// (no lock) right before each file operation of a rewrite, and of a
// migration: every line survives, exactly once.
func TestRewriteKeepsUnlockedAppendsInEveryWindow(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		dir := t.TempDir()
		path := newSession(t, dir, 20)
		if v2 {
			os.WriteFile(path, bytes.Replace(mustRead(t, path), []byte(`"version":3`), []byte(`"version":2`), 1), 0o644)
		}
		original := mustRead(t, path)
		run := func(c *faultfs.Counter) error {
			s, err := files.Open(path, files.Options{WrapFS: c.Wrap})
			if err != nil {
				return err
			}
			defer s.Close()
			if v2 {
				_, err = s.Migrate()
				return err
			}
			return rewriteSame(s)
		}
		// A first run clears the append intent newSession's last append
		// left, so that the counted run does what every later one does.
		if err := run(faultfs.New()); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, original, 0o644)
		count := faultfs.New()
		if err := run(count); err != nil {
			t.Fatal(err)
		}
		for _, op := range faultfs.Ops() {
			for n := 1; n <= count.Count(op); n++ {
				os.WriteFile(path, original, 0o644)
				id := fmt.Sprintf("p%v%d", op, n)
				c := faultfs.New()
				c.Before = func(o faultfs.Op, k int) {
					if o == op && k == n {
						piAppend(t, path, id)
					}
				}
				if err := run(c); err != nil {
					t.Fatalf("append before %v #%d: %v", op, n, err)
				}
				got := mustRead(t, path)
				if c := bytes.Count(got, []byte(`"id":"`+id+`"`)); c != 1 {
					t.Fatalf("append before %v #%d: the line is there %d times:\n%s", op, n, c, got)
				}
				f, err := session.Load(path)
				if err != nil || len(f.Warnings) > 0 || len(f.Entries) != 21 {
					t.Fatalf("append before %v #%d: %d entries, %v %v", op, n, len(f.Entries), f.Warnings, err)
				}
			}
		}
	}
}

// TestLockedWriterFollowsReplacement: a Store that opened the file before
// another rewrote it appends to the new file, not the replaced one.
func TestLockedWriterFollowsReplacement(t *testing.T) {
	path := newSession(t, t.TempDir(), 5)
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
	if err := rewriteSame(b); err != nil {
		t.Fatal(err)
	}
	es, err := a.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "after"}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := session.Load(path)
	if err != nil || len(f.Entries) != 6 || f.Entries[5].ID != es[0].ID {
		t.Fatalf("the append went elsewhere: %d entries, %v", len(f.Entries), err)
	}
	// A rewrite prepared from the replaced file is refused, file unchanged.
	if err := b.Rewrite(b.File()); err != nil {
		t.Fatal(err)
	}
	stale := a.File()
	if err := rewriteSame(b); err != nil {
		t.Fatal(err)
	}
	if err := a.Rewrite(stale); !errors.Is(err, files.ErrChanged) || !errors.Is(err, session.ErrUnchanged) {
		t.Fatalf("stale rewrite: %v", err)
	}
}

// TestSymlinkedSession: a rewrite through a link replaces the target and
// keeps the link; the archive-like sidecar goes next to the target.
func TestSymlinkedSession(t *testing.T) {
	dir := t.TempDir()
	target := newSession(t, dir, 3)
	os.WriteFile(target, bytes.Replace(mustRead(t, target), []byte(`"version":3`), []byte(`"version":2`), 1), 0o644)
	other := t.TempDir()
	link := filepath.Join(other, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s, err := files.Open(link, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if changed, err := s.Migrate(); err != nil || !changed {
		t.Fatalf("migrate: %v %v", changed, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if !bytes.Contains(mustRead(t, target), []byte(`"version":3`)) {
		t.Fatal("the target was not migrated")
	}
	if got := s.SidecarPath(".x"); got != target+".x" {
		t.Fatalf("sidecar at %s", got)
	}
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "x"}}); err != nil {
		t.Fatal(err)
	}
	if f, _ := session.Load(link); len(f.Entries) != 4 {
		t.Fatalf("%d entries through the link", len(f.Entries))
	}
}

// TestReadOnlySession: every write is refused with one clear line and the
// file is untouched, even for root (which could write a 0444 file).
func TestReadOnlySession(t *testing.T) {
	path := newSession(t, t.TempDir(), 3)
	os.WriteFile(path, bytes.Replace(mustRead(t, path), []byte(`"version":3`), []byte(`"version":2`), 1), 0o644)
	os.Chmod(path, 0o444)
	before := mustRead(t, path)
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Migrate()
	if !errors.Is(err, session.ErrReadOnly) || !errors.Is(err, session.ErrUnchanged) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("migrate: %v", err)
	}
	if err := s.Rewrite(s.File()); !errors.Is(err, session.ErrReadOnly) {
		t.Fatalf("rewrite: %v", err)
	}
	if _, err := s.Append(session.Draft{Type: session.TypeCustom}); !errors.Is(err, session.ErrReadOnly) {
		t.Fatalf("append: %v", err)
	}
	if !bytes.Equal(mustRead(t, path), before) {
		t.Fatal("a read-only session changed")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o444 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

// TestStaleTempFilesRemoved: temp files a killed rewrite left are removed
// by the next rewrite, under the lock; other files are left alone.
func TestStaleTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	path := newSession(t, dir, 3)
	stale := filepath.Join(dir, ".s.jsonl.tmp-0123456789abcdef")
	os.WriteFile(stale, []byte("half a rewrite"), 0o644)
	keep := filepath.Join(dir, ".other.jsonl.tmp-0123")
	os.WriteFile(keep, nil, 0o644)
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := rewriteSame(s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale temp file still there: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatal("another session's temp file was removed")
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".s.jsonl.tmp-*")); len(names) != 0 {
		t.Fatalf("left: %v", names)
	}
}

// TestOnlyRegularFiles: a FIFO, a device and a directory are refused at
// once by Open and Load, never read or waited on.
func TestOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	for _, p := range []string{fifo, "/dev/zero", "/dev/null", dir} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		done := make(chan error, 2)
		go func() {
			_, err := files.Open(p, files.Options{})
			done <- err
			_, err = session.Load(p)
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if !errors.Is(err, files.ErrNotRegular) {
					t.Fatalf("%s: %v", p, err)
				}
			case <-time.After(time.Minute): // a hang, not a timing assertion
				t.Fatalf("%s: Open or Load hangs", p)
			}
		}
	}
}

// TestHardLinkedSession: a rewrite would split the names, so it is
// refused; with SingleLink (pith serve) appends are refused too.
func TestHardLinkedSession(t *testing.T) {
	dir := t.TempDir()
	path := newSession(t, dir, 2)
	if err := os.Link(path, filepath.Join(dir, "other.jsonl")); err != nil {
		t.Skipf("no hard links: %v", err)
	}
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := rewriteSame(s); !errors.Is(err, files.ErrHardLinked) {
		t.Fatalf("rewrite: %v", err)
	}
	if _, err := s.Append(session.Draft{Type: session.TypeCustom}); err != nil {
		t.Fatalf("append: %v", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s2, err := files.OpenIn(root, "s.jsonl", files.Options{SingleLink: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.Append(session.Draft{Type: session.TypeCustom}); !errors.Is(err, files.ErrHardLinked) {
		t.Fatalf("single-link append: %v", err)
	}
}

// TestOpenInStaysInRoot: names that leave the root, and symlinks, are
// refused by OpenIn.
func TestOpenInStaysInRoot(t *testing.T) {
	outside := newSession(t, t.TempDir(), 1)
	dir := t.TempDir()
	os.Symlink(outside, filepath.Join(dir, "link.jsonl"))
	os.Symlink("s.jsonl", filepath.Join(dir, "inner.jsonl"))
	newSession(t, dir, 1)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"../" + filepath.Base(filepath.Dir(outside)) + "/s.jsonl", "link.jsonl", "inner.jsonl", "/etc/passwd"} {
		if s, err := files.OpenIn(root, name, files.Options{}); err == nil {
			s.Close()
			t.Fatalf("%s: opened", name)
		}
	}
	s, err := files.OpenIn(root, "s.jsonl", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := rewriteSame(s); err != nil {
		t.Fatal(err)
	}
	s3, err := files.CreateIn(root, "new.jsonl", "/w", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s3.Close()
}

// TestRewriteKeepsOwner: root rewriting another user's session leaves it
// theirs.
func TestRewriteKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	path := newSession(t, t.TempDir(), 2)
	if err := os.Chown(path, 1234, 5678); err != nil {
		t.Skip(err)
	}
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := rewriteSame(s); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1234 || st.Gid != 5678 {
		t.Fatalf("owner %d:%d", st.Uid, st.Gid)
	}
}
