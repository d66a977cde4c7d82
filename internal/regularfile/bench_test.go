package regularfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/internal/regularfile"
)

// BenchmarkOpen: what the mechanism costs per open (the viewer opens the
// session on every reading): the check by name and the check of the
// opened file, against a bare open with its own stat.
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("bare-open-fstat", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Stat(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("stat-open-fstat", func(b *testing.B) {
		for b.Loop() {
			f, err := regularfile.Open(path, os.O_RDONLY, 0, os.Stat, os.OpenFile)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("open-fstat", func(b *testing.B) {
		for b.Loop() {
			f, err := regularfile.Open(path, os.O_RDONLY, 0, nil, os.OpenFile)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	b.Run("root-stat-open-fstat", func(b *testing.B) {
		for b.Loop() {
			f, err := regularfile.Open("s.jsonl", os.O_RDONLY, 0, root.Stat, root.OpenFile)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
