package dispatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
)

// BenchmarkCheckCompactingResult: the per-call cost of bounding a result
// with 1 MiB of nested preserveData and 100 context lines.
func BenchmarkCheckCompactingResult(b *testing.B) {
	obj := `{"k":[1,2,{"s":"` + strings.Repeat("x", 100) + `"}]}`
	preserve := json.RawMessage("[" + strings.Repeat(obj+",", (1<<20)/len(obj)) + "0]")
	ctx := make([]string, 100)
	for i := range ctx {
		ctx[i] = strings.Repeat("c", 200)
	}
	r := &hooks.CompactingResult{Context: ctx, PreserveData: preserve}
	b.SetBytes(int64(len(preserve)))
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckCompactingResult(r, hooks.Limits{PreserveDataBytes: 2 << 20}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBoundBeforeCompact: cutting a 100 000-entry path to 16 MiB and
// 300 000 messages to summarize (~300 MB) to 64 MiB for one plugin.
func BenchmarkBoundBeforeCompact(b *testing.B) {
	entry := json.RawMessage(`{"type":"message","id":"x","message":{"role":"user","content":"` + strings.Repeat("w", 900) + `"}}`)
	ev := hooks.BeforeCompactEvent{PathEntries: make([]json.RawMessage, 100_000), PathSinceCompaction: 40_000}
	for i := range ev.PathEntries {
		ev.PathEntries[i] = entry
	}
	ev.Preparation.MessagesToSummarize = make([]json.RawMessage, 300_000)
	for i := range ev.Preparation.MessagesToSummarize {
		ev.Preparation.MessagesToSummarize[i] = entry
	}
	b.ReportAllocs()
	for b.Loop() {
		out := BoundBeforeCompact(ev, hooks.Limits{})
		if !out.PathTruncated || !out.Preparation.MessagesTruncated {
			b.Fatal("not cut")
		}
	}
}
