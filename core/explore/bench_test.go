package explore

import "testing"

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
	for b.Loop() {
		ov, err := BuildOverview(NewRange(msgs), in, budgets)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(ov.Tokens), "overview-tokens")
	}
	b.ReportMetric(float64(len(msgs)), "items")
}
