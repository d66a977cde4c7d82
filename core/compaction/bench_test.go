package compaction

import (
	"bytes"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
)

// benchSessions are 100 000-entry generated sessions (~110 MB each), made
// once per test binary: one as generated (earlier compactions, branches),
// one without compactions so a compaction must consider the whole path.
var benchSessions = struct {
	once                  sync.Once
	withCompactions, flat []*session.Entry
	err                   error
}{}

func benchPaths(b *testing.B) (withCompactions, flat []*session.Entry) {
	b.Helper()
	benchSessions.once.Do(func() {
		gen := func(o sessiongen.Options) []*session.Entry {
			var buf bytes.Buffer
			if err := sessiongen.Generate(&buf, o); err != nil {
				benchSessions.err = err
				return nil
			}
			f, err := session.Parse(buf.Bytes())
			if err != nil {
				benchSessions.err = err
				return nil
			}
			tree := session.NewTree(f.Entries)
			return tree.Path(tree.Last())
		}
		benchSessions.withCompactions = gen(sessiongen.Benchmark(1, 100_000))
		o := sessiongen.Benchmark(2, 100_000)
		o.Compaction = 0
		o.Branch = 0
		benchSessions.flat = gen(o)
	})
	if benchSessions.err != nil {
		b.Fatal(benchSessions.err)
	}
	return benchSessions.withCompactions, benchSessions.flat
}

func BenchmarkFindCutPoint(b *testing.B) {
	_, flat := benchPaths(b)
	b.Logf("path of %d entries", len(flat))
	b.ReportAllocs()
	for b.Loop() {
		FindCutPoint(flat, 0, len(flat), 20000)
	}
}

func BenchmarkPrepare(b *testing.B) {
	withCompactions, flat := benchPaths(b)
	// The generator's usage grows with the session (no compaction ever
	// shrinks the flat one), so calibration there sums estimates over the
	// whole path; with real usage, bounded by a model's window, it stops
	// after about a window's worth of text.
	noCal := DefaultSettings()
	noCal.CalibrateKeepRecent = false
	for _, bc := range []struct {
		name     string
		path     []*session.Entry
		settings Settings
	}{
		{"after-last-compaction", withCompactions, DefaultSettings()},
		{"whole-path", flat, DefaultSettings()},
		{"whole-path-no-calibration", flat, noCal},
	} {
		b.Run(bc.name, func(b *testing.B) {
			prep, err := Prepare(bc.path, bc.settings)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("path %d entries, range from %d, %d messages to summarize", len(bc.path), prep.RangeStart, len(prep.MessagesToSummarize))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Prepare(bc.path, bc.settings); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
