package explore

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkOverview100k builds the overview of a never-compacted
// 100 000-entry session (the range is everything before the retained
// tail). Each iteration starts from a fresh Range, so nothing decoded by an
// earlier iteration is reused.
func BenchmarkOverview100k(b *testing.B) {
	prep := generated(b, 1, 100000)
	msgs := rangeMessages(prep)
	budgets := DefaultBudgets()
	in := OverviewInput{ReadFiles: prep.ReadFiles, ModifiedFiles: prep.ModifiedFiles}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		ov, err := BuildOverview(NewRange(msgs), in, budgets)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(ov.Tokens), "overview-tokens")
	}
	// On a shared machine ns/op is mostly waiting for a core; the process's
	// CPU time per op is the figure to compare.
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(len(msgs)), "items")
}

// BenchmarkSearch100k is one search_session_log call over the same range,
// the items already decoded (the worker's second and later searches).
func BenchmarkSearch100k(b *testing.B) {
	prep := generated(b, 1, 100000)
	st := &toolState{r: NewRange(rangeMessages(prep)), b: DefaultBudgets()}
	st.search("warm", "", "", 0, 0, 1) // decode every item once
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st.search("struct handler", "", "", 0, 0, 20)
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
