package store_test

import (
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

func BenchmarkFilesContext(b *testing.B) {
	storetest.BenchContext(b, filesOpener(b), 1, 2000)
}
