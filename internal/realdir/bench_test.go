package realdir

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkStat: the check of a session's directories that pith serve
// makes on every open and viewer request while tokens have prefixes.
func BenchmarkStat(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "team-a/project/2026"), 0o755); err != nil {
		b.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Stat(r, "team-a/project/2026"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLstatChain is what server's realDirs did before: an Lstat of
// each directory from the top, each of which os.Root walks down to.
func BenchmarkLstatChain(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "team-a/project/2026"), 0o755); err != nil {
		b.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range []string{"team-a", "team-a/project", "team-a/project/2026"} {
			if _, err := r.Lstat(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
