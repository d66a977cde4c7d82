package branch

import (
	"bytes"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
)

var (
	benchOnce sync.Once
	benchTree *session.Tree
	benchErr  error
)

// benchSessionTree generates and parses a 100 000-entry session (the
// sessiongen Benchmark preset, about 110 MB) once per test binary run.
func benchSessionTree(b *testing.B) *session.Tree {
	benchOnce.Do(func() {
		var buf bytes.Buffer
		if benchErr = sessiongen.Generate(&buf, sessiongen.Benchmark(1, 100_000)); benchErr != nil {
			return
		}
		f, err := session.Parse(buf.Bytes())
		if err != nil {
			benchErr = err
			return
		}
		benchTree = session.NewTree(f.Entries)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchTree
}

// benchTargets returns the old leaf (the last entry) and the root of its
// path: navigating there abandons the whole path, the worst case.
func benchTargets(b *testing.B) (*session.Tree, string, string) {
	tree := benchSessionTree(b)
	leaf := tree.Last()
	return tree, leaf.ID, tree.Path(leaf)[0].ID
}

// BenchmarkCollect collects the whole current path of the session.
func BenchmarkCollect(b *testing.B) {
	tree, leaf, root := benchTargets(b)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		entries, _ := CollectEntriesForBranchSummary(tree, leaf, root)
		n = len(entries)
	}
	b.ReportMetric(float64(n), "entries")
}

// BenchmarkCollectPrepare is Navigate's work before the summarizer call
// under the default budget (128 000 − 16 384).
func BenchmarkCollectPrepare(b *testing.B) {
	tree, leaf, root := benchTargets(b)
	b.ReportAllocs()
	var p Prepared
	for b.Loop() {
		entries, _ := CollectEntriesForBranchSummary(tree, leaf, root)
		p = PrepareBranchEntries(entries, DefaultContextWindow-DefaultReserveTokens)
	}
	b.ReportMetric(float64(len(p.Messages)), "messages")
}

// BenchmarkCollectPrepareUnlimited prepares the whole path with no budget:
// every message of 100 000 entries estimated.
func BenchmarkCollectPrepareUnlimited(b *testing.B) {
	tree, leaf, root := benchTargets(b)
	b.ReportAllocs()
	var p Prepared
	for b.Loop() {
		entries, _ := CollectEntriesForBranchSummary(tree, leaf, root)
		p = PrepareBranchEntries(entries, 0)
	}
	b.ReportMetric(float64(len(p.Messages)), "messages")
}
