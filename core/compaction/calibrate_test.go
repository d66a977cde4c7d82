package compaction

import (
	"math"
	"strconv"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/tidwall/sjson"
)

// withOverhead rewrites the usage of every assistant message on path as a
// provider with a fixed overhead (system prompt, tool schemas) and a
// tokenizer counting factor × the chars/4 estimate would report it: the
// prompt is overhead + factor × the estimate of every message before it.
func withOverhead(t testing.TB, path []*session.Entry, overhead int, factor float64) []*session.Entry {
	t.Helper()
	out := make([]*session.Entry, len(path))
	before := 0
	for i, e := range path {
		out[i] = e
		m, ok := summaryMessage(e)
		if !ok {
			continue
		}
		if e.Role() == session.RoleAssistant {
			prompt := overhead + int(math.Round(factor*float64(before)))
			raw, err := sjson.SetRawBytes(e.Raw, "message.usage", []byte(`{"input":`+strconv.Itoa(prompt)+
				`,"output":50,"cacheRead":0,"cacheWrite":0,"totalTokens":`+strconv.Itoa(prompt+50)+`}`))
			if err != nil {
				t.Fatal(err)
			}
			ne, err := session.ParseEntry(raw)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = ne
		}
		before += tokens.Estimate(m.Raw)
	}
	return out
}

// TestCalibrateDeltaCancelsOverhead: with 10 000 tokens of overhead and a
// tokenizer that counts exactly the estimate, the delta method finds ratio
// 1 and keeps the budget; the total method shrinks it.
func TestCalibrateDeltaCancelsOverhead(t *testing.T) {
	b := &builder{}
	for range 20 {
		b.user(300)
		b.assistant(300)
	}
	path := withOverhead(t, b.path(t), 10000, 1.0)
	s := Settings{KeepRecentTokens: 5000, CalibrateKeepRecent: true}
	delta := Calibrate(path, 0, len(path), s, ContextTokens(path))
	if delta.Method != CalibrationDelta || math.Abs(delta.Ratio-1) > 0.01 || delta.KeepRecentTokens != 5000 {
		t.Fatalf("delta: %+v", delta)
	}
	s.CalibrationMethod = CalibrationTotal
	total := Calibrate(path, 0, len(path), s, ContextTokens(path))
	if total.Ratio < 1.5 || total.KeepRecentTokens > 3500 {
		t.Fatalf("total: %+v", total)
	}

	// A tokenizer counting 1.5× the estimate is still found.
	path = withOverhead(t, b.path(t), 10000, 1.5)
	s.CalibrationMethod = CalibrationDelta
	delta = Calibrate(path, 0, len(path), s, ContextTokens(path))
	if math.Abs(delta.Ratio-1.5) > 0.01 || delta.KeepRecentTokens < 3300 || delta.KeepRecentTokens > 3334 {
		t.Fatalf("delta at 1.5: %+v", delta)
	}
}

// TestCalibrateDeltaNeedsTwoUsages: one usage cannot tell overhead from
// content, and usages before the last compaction measured another context.
func TestCalibrateDeltaNeedsTwoUsages(t *testing.T) {
	b := &builder{}
	for range 5 {
		b.user(100)
		b.assistant(100)
	}
	b.assistantUsage(100, 40000)
	path := b.path(t)
	c := Calibrate(path, 0, len(path), Settings{KeepRecentTokens: 1000, CalibrateKeepRecent: true}, ContextTokens(path))
	if c.Ratio != 0 || c.KeepRecentTokens != 1000 {
		t.Fatalf("one usage: %+v", c)
	}

	b = &builder{}
	b.user(100)
	b.assistantUsage(100, 1000)
	kept := b.user(100)
	b.assistantUsage(100, 90000)
	b.compaction(kept, "summary", "")
	b.user(100)
	b.assistantUsage(100, 900)
	path = b.path(t)
	c = Calibrate(path, 0, len(path), Settings{KeepRecentTokens: 1000, CalibrateKeepRecent: true}, ContextTokens(path))
	if c.Ratio != 0 || c.KeepRecentTokens != 1000 {
		t.Fatalf("usages across a compaction: %+v", c)
	}
}

// TestCalibrateDemoWithOverhead is the case of the demo session: its
// usages rewritten as a provider with ~10 000 tokens of fixed overhead and
// a tokenizer counting 1.1× the estimate reports them. The delta method
// keeps ≥ 15 000 of keepRecentTokens 20 000; the original formula shrinks
// it far below.
func TestCalibrateDemoWithOverhead(t *testing.T) {
	f, err := session.Load("../../examples/demo-session.jsonl")
	if err != nil {
		t.Skipf("demo session: %v", err)
	}
	tree := session.NewTree(f.Entries)
	path := withOverhead(t, tree.Path(tree.Last()), 10000, 1.1)
	s := Settings{KeepRecentTokens: 20000, CalibrateKeepRecent: true}
	delta := Calibrate(path, 0, len(path), s, ContextTokens(path))
	s.CalibrationMethod = CalibrationTotal
	total := Calibrate(path, 0, len(path), s, ContextTokens(path))
	t.Logf("delta: ratio %.3f keep %d; total: ratio %.3f keep %d", delta.Ratio, delta.KeepRecentTokens, total.Ratio, total.KeepRecentTokens)
	if delta.KeepRecentTokens < 15000 {
		t.Errorf("delta keeps %d of 20000", delta.KeepRecentTokens)
	}
	if total.KeepRecentTokens >= 15000 {
		t.Errorf("the total formula keeps %d of 20000: the fixture does not show its overstatement", total.KeepRecentTokens)
	}
}
