package files_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/store/storetest"
)

func TestFilesConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() store.Store {
		dir := t.TempDir()
		return func() store.Store {
			s, err := files.OpenStore(dir, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

func FuzzFilesRoundTrip(f *testing.F) {
	for _, s := range storetest.Seeds {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	s, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		storetest.RoundTrip(t, s, fmt.Sprintf("f%d-%d.jsonl", os.Getpid(), n), data)
	})
}

func filesOpener(b *testing.B) func() store.Store {
	dir := b.TempDir()
	return func() store.Store {
		s, err := files.OpenStore(dir, files.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
}

func BenchmarkFilesAppend(b *testing.B) {
	b.Run("own-sessions", func(b *testing.B) { storetest.BenchAppend(b, filesOpener(b), 1, false) })
	b.Run("one-session", func(b *testing.B) { storetest.BenchAppend(b, filesOpener(b), 1, true) })
}

func BenchmarkFilesSessionAppend(b *testing.B) {
	b.Run("one-host", func(b *testing.B) { storetest.BenchSessionAppend(b, filesOpener(b), 1, 2000) })
	b.Run("three-hosts", func(b *testing.B) { storetest.BenchSessionAppend(b, filesOpener(b), 3, 2000) })
}

func BenchmarkFilesContext(b *testing.B) {
	storetest.BenchContext(b, filesOpener(b), 1, 2000)
}

func TestFilesSession(t *testing.T) {
	storetest.RunSession(t, func(t *testing.T) func() store.Store {
		dir := t.TempDir()
		return func() store.Store {
			s, err := files.OpenStore(dir, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// TestFilesListSkipsArchives: a session's prune archive beside it is not
// listed as a session; a lone file with such a name is.
func TestFilesListSkipsArchives(t *testing.T) {
	dir := t.TempDir()
	// Hidden companions (the append intent sidecar, a killed rewrite's
	// temp file) are never sessions either.
	for _, n := range []string{"a.jsonl", "a.jsonl.pruned.jsonl", "lone.pruned.jsonl", "b.jsonl", ".a.jsonl.append", ".b.jsonl.tmp-0123456789abcdef"} {
		if err := os.WriteFile(dir+"/"+n, []byte(storetest.Sample), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.List(context.Background())
	if err != nil || fmt.Sprint(got) != "[a.jsonl b.jsonl lone.pruned.jsonl]" {
		t.Fatalf("List = %v, %v", got, err)
	}
}

func BenchmarkFilesSessionRefresh(b *testing.B) {
	b.Run("2000-entries", func(b *testing.B) { storetest.BenchSessionRefresh(b, filesOpener(b), 2000) })
	b.Run("20000-entries", func(b *testing.B) { storetest.BenchSessionRefresh(b, filesOpener(b), 20000) })
}

// TestFilesTailIncremental: Tail, which reads on from where it stopped,
// agrees with TailOf on the whole file at every step: lines appended by
// another writer, a torn line and its completion, a rename over the file,
// a reader behind the mark, a reader reading its last line again.
func TestFilesTailIncremental(t *testing.T) {
	dir := t.TempDir()
	s, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Create(ctx, "t.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	path := dir + "/t.jsonl"
	raw := func(b string) {
		h, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.WriteString(b)
		h.Close()
	}
	check := func(step string, after int) int {
		t.Helper()
		data, _ := os.ReadFile(path)
		want, wantN := store.TailOf(data, after)
		got, n, err := s.Tail(ctx, "t.jsonl", after)
		if err != nil || n != wantN || string(got) != string(want) {
			t.Fatalf("%s: Tail(%d) = %q, %d, %v; want %q, %d", step, after, got, n, err, want, wantN)
		}
		return n
	}
	n := check("start", 0)
	raw(`{"type":"custom","id":"c1","parentId":"aaaa0002","timestamp":"2026-01-01T00:00:03.000Z","customType":"x"}` + "\n")
	n = check("appended", n)
	// store.Session's catch-up reads its last line again.
	check("the last line again", n-1)
	raw(`{"type":"custom","id":"c0","parentId":"c1","timestamp":"2026-01-01T00:00:03.500Z","customType":"x"}` + "\n")
	n = check("appended after the last line again", n-1)
	check("the last line again, twice", n-1)
	raw(`{"type":"custom","id":"c2","par`)
	check("torn", n)
	raw(`entId":"c1","timestamp":"2026-01-01T00:00:04.000Z","customType":"x"}` + "\n")
	n = check("completed", n)
	check("behind the mark", 2)
	check("at the start again", 0)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(dir+"/.new", append(data[:len(data)/2:len(data)/2], '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+"/.new", path); err != nil {
		t.Fatal(err)
	}
	check("renamed over", n)
	check("renamed over, from 0", 0)
}

// FuzzFilesTail writes the pieces of data (split at 0xff bytes) to a
// session one at a time, as another writer would, and after each asks
// Tail from a position the fuzzer picks; every answer must equal TailOf
// on the whole file. A 0xfe byte in a piece replaces the file (a rewrite)
// with what it holds so far.
func FuzzFilesTail(f *testing.F) {
	f.Add([]byte("a\nb\n\xffc\xff\nd\n"), uint8(1))
	f.Add([]byte("x\n\xfe\xffy\nz"), uint8(0))
	dir := f.TempDir()
	s, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte, seed uint8) {
		n++
		name := fmt.Sprintf("t%d-%d.jsonl", os.Getpid(), n)
		path := dir + "/" + name
		if err := os.WriteFile(path, []byte(storetest.Sample), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		pick := int(seed)
		for _, piece := range bytes.Split(data, []byte{0xff}) {
			if i := bytes.IndexByte(piece, 0xfe); i >= 0 {
				cur, _ := os.ReadFile(path)
				tmp := path + ".tmp"
				os.WriteFile(tmp, append(cur, piece[:i]...), 0o644)
				os.Rename(tmp, path)
				piece = piece[i+1:]
			}
			h, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(piece)
			h.Close()
			whole, _ := os.ReadFile(path)
			_, lines := store.TailOf(whole, 0)
			after := (pick * 7) % (lines + 2)
			pick++
			want, wantN := store.TailOf(whole, after)
			got, gotN, err := s.Tail(ctx, name, after)
			if err != nil || gotN != wantN || !bytes.Equal(got, want) {
				t.Fatalf("Tail(%d) = %q, %d, %v; want %q, %d", after, got, gotN, err, want, wantN)
			}
		}
	})
}

// TestCreateSweepsStaleImports: a Create killed before it linked its temp
// file under the name leaves the temp; the next Create of that name (the
// retry) removes those older than an hour, and leaves a younger one, which
// may be a concurrent Create's.
func TestCreateSweepsStaleImports(t *testing.T) {
	root := t.TempDir()
	f, err := files.OpenStore(root, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stale := filepath.Join(root, ".s.jsonl.import-0123456789ab")
	young := filepath.Join(root, ".s.jsonl.import-ba9876543210")
	for _, p := range []string{stale, young} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	header := []byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n")
	if err := f.Create(context.Background(), "s.jsonl", header); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temp is still there: %v", err)
	}
	if _, err := os.Lstat(young); err != nil {
		t.Errorf("a young temp was removed: %v", err)
	}
}

// TestFilesLongName: a session whose name is 250 bytes is created (its
// temp file), leased, rewritten with an archive and read back, and listed
// alone — every companion file beside it gets a name that fits
// (session.SideName). Create failed with "file name too long" (the temp
// file .NAME.import-RANDOM), and CheckSidecar refused every sidecar.
func TestFilesLongName(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name := "d/" + strings.Repeat("n", 250-len(".jsonl")) + ".jsonl"
	if err := s.Create(ctx, name, []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, name, "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Load(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Rewrite(ctx, l, store.LastID(f), []byte(storetest.Sample), store.SidecarChange{Suffix: ".pruned.jsonl", Keep: -1, Append: []byte("r1\n")}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadSidecar(ctx, name, ".pruned.jsonl"); err != nil || string(got) != "r1\n" {
		t.Fatalf("sidecar %q, %v", got, err)
	}
	if got, err := s.List(ctx); err != nil || len(got) != 1 || got[0] != name {
		t.Fatalf("List = %v, %v", got, err)
	}
}

// TestLeaseFileLink: a link planted where a session's lease file goes is
// not written through: taking the lease truncated the file it leads to and
// wrote the lease into it — a symlink first, then a hard link.
func TestLeaseFileLink(t *testing.T) {
	for _, c := range []struct {
		name string
		link func(victim, at string) error
	}{
		{"symlink", func(victim, at string) error { return os.Symlink(filepath.Base(victim), at) }},
		{"hard link", os.Link},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s, err := files.OpenStore(dir, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, n := range []string{"d/a-x.jsonl", "d/b-victim.jsonl"} {
				if err := s.Create(ctx, n, []byte(storetest.Sample)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.link(filepath.Join(dir, "d/b-victim.jsonl"), filepath.Join(dir, "d/a-x.jsonl.lease")); err != nil {
				t.Fatal(err)
			}
			_, err = s.AcquireLease(ctx, "d/a-x.jsonl", "A", time.Minute)
			t.Logf("lease: %v", err)
			if got, _ := os.ReadFile(filepath.Join(dir, "d/b-victim.jsonl")); string(got) != storetest.Sample {
				t.Fatalf("the file the link leads to was written: %q", got)
			}
		})
	}
}
