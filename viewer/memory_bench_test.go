package viewer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/viewer"
)

// BenchmarkOpenSessionMemory measures what one open session costs the
// viewer in memory: the live heap after opening it (and a GC), per byte
// of the session file. server.viewerMaxBytes budgets session bytes; this
// is the factor between them and the memory they hold.
func BenchmarkOpenSessionMemory(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		b.Run(fmt.Sprintf("%dk-entries", n/1000), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "s.jsonl")
			if err := sessiongen.GenerateFile(path, sessiongen.Benchmark(1, n)); err != nil {
				b.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			var heap, peak float64
			for b.Loop() {
				before := liveHeap()
				h, err := viewer.New(viewer.Options{Path: path, Settings: testSettings})
				if err != nil {
					b.Fatal(err)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = float64(ms.HeapInuse)
				heap = float64(liveHeap() - before)
				runtime.KeepAlive(h)
				h.Close()
			}
			b.ReportMetric(float64(st.Size())/1e6, "file-MB")
			b.ReportMetric(heap/float64(st.Size()), "heap/file-byte")
			b.ReportMetric(peak/1e6, "heap-in-use-MB")
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
