package compaction

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/store/files"
)

// bigSession is a 100 000-entry (≈ 100 MB) generated session, written once per test binary.
func bigSession(b *testing.B) string {
	o := sessiongen.Benchmark(1, 100_000)
	o.Compaction = 0 // all results in the context, so there is much to prune
	p, err := sessiongen.Shared("big.jsonl", o)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func copyTo(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPruneRewrite prunes a 100 MB session: archive the originals,
// rewrite the whole file through the write protocol (temp file, fsync,
// carry-over check, rename, directory fsync). Opening is not timed.
func BenchmarkPruneRewrite(b *testing.B) {
	src := bigSession(b)
	st, _ := os.Stat(src)
	b.SetBytes(st.Size())
	dir := b.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		os.Remove(path + ArchiveSuffix)
		copyTo(b, src, path)
		s, err := files.Open(path, files.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		plan, err := Prune(s, PruneSettings{Protect: 40000, Minimum: 20000}, time.Now())
		if err != nil || len(plan.Items) == 0 {
			b.Fatalf("%+v %v", plan.Saving, err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkRestore restores every pruned output of a pruned 100 MB session:
// read and verify the archive, rewrite the file.
func BenchmarkRestore(b *testing.B) {
	src := bigSession(b)
	dir := b.TempDir()
	pruned := filepath.Join(dir, "pruned.jsonl")
	copyTo(b, src, pruned)
	s, err := files.Open(pruned, files.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Prune(s, PruneSettings{Protect: 40000, Minimum: 20000}, time.Now()); err != nil {
		b.Fatal(err)
	}
	s.Close()
	st, _ := os.Stat(pruned)
	b.SetBytes(st.Size())
	path := filepath.Join(dir, "s.jsonl")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		copyTo(b, pruned, path)
		copyTo(b, pruned+ArchiveSuffix, path+ArchiveSuffix)
		s, err := files.Open(path, files.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := Restore(s)
		if err != nil || res.Restored == 0 {
			b.Fatalf("%+v %v", res, err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}
