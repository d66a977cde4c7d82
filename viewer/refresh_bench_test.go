package viewer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
)

// BenchmarkRefreshAfterAppend100k: the viewer of a 100 000-entry (110 MB)
// session reads it after one entry was appended — "whole" reads and
// parses the session again (what every change cost before), "appended"
// reads only the new line. Both rebuild the snapshot (tree and layout).
func BenchmarkRefreshAfterAppend100k(b *testing.B) {
	for _, mode := range []struct {
		name string
		full bool
	}{{"whole", true}, {"appended", false}} {
		b.Run(mode.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.jsonl")
			if err := sessiongen.GenerateFile(path, sessiongen.Benchmark(1, 100_000)); err != nil {
				b.Fatal(err)
			}
			h, err := New(Options{Path: path, Debounce: 1 << 62})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := f.WriteString(entryLine(fmt.Sprintf("bench%07d", i), h.LeafID(), "one more")); err != nil {
					b.Fatal(err)
				}
				if err := h.reload(mode.full); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
