package session_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
)

// benchSession writes a 100 000-entry generated session (about 110 MB: tool
// calls and results of many sizes, unicode, branches, compactions) once per
// test binary run.
func benchSession(b *testing.B) (string, int64) {
	benchPath, err := sessiongen.Shared("bench.jsonl", sessiongen.Benchmark(1, 100_000))
	if err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(benchPath)
	if err != nil {
		b.Fatal(err)
	}
	return benchPath, st.Size()
}

// BenchmarkParse measures parsing a 100 000-entry session already in memory.
func BenchmarkParse(b *testing.B) {
	path, size := benchSession(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		f, err := session.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		if len(f.Entries) != 100_000 {
			b.Fatalf("entries = %d", len(f.Entries))
		}
	}
	b.ReportMetric(float64(100_000*b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkOpenBuildContext is the whole cold path of `pith context`:
// read the file, parse it, index the tree, build the context.
func BenchmarkOpenBuildContext(b *testing.B) {
	path, size := benchSession(b)
	b.SetBytes(size)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		f, err := session.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		ctx := session.NewTree(f.Entries).BuildContext(session.LeafDefault)
		if len(ctx.Messages) == 0 {
			b.Fatal("empty context")
		}
	}
}

// BenchmarkBuildContext measures BuildContext alone on an indexed tree.
func BenchmarkBuildContext(b *testing.B) {
	path, _ := benchSession(b)
	f, err := session.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	tree := session.NewTree(f.Entries)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		tree.BuildContext(session.LeafDefault)
	}
}

// BenchmarkBuildContextFresh measures BuildContext on a new tree each
// time, as pith context does: no id index is built beforehand.
func BenchmarkBuildContextFresh(b *testing.B) {
	path, _ := benchSession(b)
	f, err := session.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		session.NewTree(f.Entries).BuildContext(session.LeafDefault)
	}
}

// cpuTime is the process's user+system CPU time. Benchmarks report CPU per
// operation beside wall time because this machine is often shared.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
