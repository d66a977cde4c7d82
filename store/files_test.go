package store_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/storetest"
)

func TestFilesConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() store.Store {
		dir := t.TempDir()
		return func() store.Store {
			s, err := store.OpenFiles(dir, session.Options{})
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
	s, err := store.OpenFiles(dir, session.Options{})
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
		s, err := store.OpenFiles(dir, session.Options{})
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

func TestTailOf(t *testing.T) {
	for _, c := range []struct {
		data  string
		after int
		tail  string
		n     int
	}{
		{"", 0, "", 0},
		{"a\n", 0, "a\n", 1},
		{"a\nb\n", 1, "b\n", 2},
		{"a\nb\n", 2, "", 2},
		{"a\nb\n", 5, "", 2},
		{"a\nb", 1, "b", 2},
		{"a\n\nc\n", 1, "\nc\n", 3},
	} {
		tail, n := store.TailOf([]byte(c.data), c.after)
		if string(tail) != c.tail || n != c.n {
			t.Errorf("TailOf(%q, %d) = %q, %d; want %q, %d", c.data, c.after, tail, n, c.tail, c.n)
		}
	}
}

func TestFilesSession(t *testing.T) {
	storetest.RunSession(t, func(t *testing.T) func() store.Store {
		dir := t.TempDir()
		return func() store.Store {
			s, err := store.OpenFiles(dir, session.Options{})
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
	for _, n := range []string{"a.jsonl", "a.jsonl.pruned.jsonl", "lone.pruned.jsonl", "b.jsonl"} {
		if err := os.WriteFile(dir+"/"+n, []byte(storetest.Sample), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := store.OpenFiles(dir, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.List(context.Background())
	if err != nil || fmt.Sprint(got) != "[a.jsonl b.jsonl lone.pruned.jsonl]" {
		t.Fatalf("List = %v, %v", got, err)
	}
}
