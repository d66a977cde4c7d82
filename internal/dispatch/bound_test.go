package dispatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
)

func entriesOf(sizes ...int) []json.RawMessage {
	out := make([]json.RawMessage, len(sizes))
	for i, n := range sizes {
		out[i] = json.RawMessage(strings.Repeat("x", n))
	}
	return out
}

func TestBoundEntries(t *testing.T) {
	tests := []struct {
		name      string
		sizes     []int
		since     int
		max       int
		wantSizes int // number of entries kept (always a suffix)
		truncated bool
	}{
		// Each entry costs its bytes plus entryOverhead (6).
		{"all fit", []int{10, 10, 10}, 1, 48, 3, false},
		{"from the last compaction", []int{10, 10, 10, 10}, 3, 40, 1, true},
		{"newest that fit when the tail does not", []int{10, 10, 10, 10}, 1, 40, 2, true},
		{"no compaction: newest that fit", []int{10, 10, 10}, 0, 20, 1, true},
		{"nothing fits", []int{10, 50}, 0, 20, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := entriesOf(tc.sizes...)
			got, cut, _ := boundEntries(in, tc.since, tc.max)
			if len(got) != tc.wantSizes || cut != tc.truncated {
				t.Fatalf("kept %d (truncated %v), want %d (%v)", len(got), cut, tc.wantSizes, tc.truncated)
			}
			for i := range got {
				if &got[i][0] != &in[len(in)-len(got)+i][0] {
					t.Fatal("not a suffix of the path")
				}
			}
		})
	}
}

// TestBoundMessages: the preparation's messages are cut to the newest that
// fit messagesBytes, turn prefix first, and the totals say what was there.
func TestBoundMessages(t *testing.T) {
	ev := hooks.BeforeCompactEvent{Preparation: hooks.Preparation{
		MessagesToSummarize: entriesOf(94, 94, 94, 94), // 100 bytes each on the wire
		TurnPrefixMessages:  entriesOf(94, 94),
	}}
	for _, tc := range []struct {
		max, msgs, prefix int
		cut               bool
	}{
		{600, 4, 2, false},
		{450, 2, 2, true},
		{150, 0, 1, true},
		{50, 0, 0, true},
	} {
		out := BoundBeforeCompact(ev, hooks.Limits{MessagesBytes: tc.max})
		p := out.Preparation
		if len(p.MessagesToSummarize) != tc.msgs || len(p.TurnPrefixMessages) != tc.prefix || p.MessagesTruncated != tc.cut {
			t.Errorf("max %d: kept %d+%d (truncated %v), want %d+%d (%v)", tc.max,
				len(p.MessagesToSummarize), len(p.TurnPrefixMessages), p.MessagesTruncated, tc.msgs, tc.prefix, tc.cut)
		}
		if p.MessagesTotal != 4 || p.TurnPrefixTotal != 2 {
			t.Errorf("max %d: totals %d+%d, want 4+2", tc.max, p.MessagesTotal, p.TurnPrefixTotal)
		}
	}
	if len(ev.Preparation.MessagesToSummarize) != 4 {
		t.Error("bounding changed the caller's event")
	}
}

// TestBoundLabels: labels share pathEntriesBytes with the path, newest
// first; cutting either marks the path truncated.
func TestBoundLabels(t *testing.T) {
	var labels []hooks.Label
	for i := range 10 {
		labels = append(labels, hooks.Label{EntryID: strings.Repeat("e", 5), Label: string(rune('a' + i))})
	}
	ev := hooks.BeforeCompactEvent{Labels: labels, PathEntries: entriesOf(94, 94)}
	out := BoundBeforeCompact(ev, hooks.Limits{PathEntriesBytes: 3 * (6 + 18)})
	if len(out.Labels) != 3 || out.Labels[2].Label != "j" || len(out.PathEntries) != 0 || !out.PathTruncated {
		t.Fatalf("labels %v, %d path entries, truncated %v", out.Labels, len(out.PathEntries), out.PathTruncated)
	}
	out = BoundBeforeCompact(ev, hooks.Limits{PathEntriesBytes: 10*24 + 100})
	if len(out.Labels) != 10 || len(out.PathEntries) != 1 || !out.PathTruncated {
		t.Fatalf("labels %d, %d path entries, truncated %v", len(out.Labels), len(out.PathEntries), out.PathTruncated)
	}
}

// TestEventBudgetsStayUnderTheWire: whatever the limits, path and
// messages together stay within MaxEventBytes.
func TestEventBudgetsStayUnderTheWire(t *testing.T) {
	path, msgs := eventBudgets(hooks.Limits{PathEntriesBytes: 1 << 30, MessagesBytes: 1 << 30})
	if path+msgs > MaxEventBytes || path <= 0 || msgs <= 0 {
		t.Fatalf("budgets %d + %d, max %d", path, msgs, MaxEventBytes)
	}
}
