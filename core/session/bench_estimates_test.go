package session_test

import (
	"os"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// BenchmarkParseEstimates is BenchmarkParse with every message's estimate
// measured in the scan, as compact --dry-run reads a session; the
// difference between the two is what measuring costs.
func BenchmarkParseEstimates(b *testing.B) {
	path, size := benchSession(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		f, err := session.ParseWith(data, session.ParseOptions{Estimates: true})
		if err != nil {
			b.Fatal(err)
		}
		if len(f.Entries) != 100_000 {
			b.Fatalf("entries = %d", len(f.Entries))
		}
	}
}
