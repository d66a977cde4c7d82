package compaction

import (
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestCutBeforeTrailingResults: with the setting on (the engine's default),
// a budget filled inside trailing tool results cuts before the call that
// produced them, so a huge last tool output does not block compaction.
func TestCutBeforeTrailingResults(t *testing.T) {
	b := &builder{}
	b.user(10)
	b.assistant(10)
	u2 := b.user(10)
	a := b.assistant(10, "c1:bash")
	b.result("c1", "bash", 5000)
	path := b.path(t)
	cp := findCutPoint(path, 0, len(path), 100, true)
	if path[cp.FirstKeptIndex].ID != a || cp.TurnStartIndex < 0 || path[cp.TurnStartIndex].ID != u2 || !cp.IsSplitTurn {
		t.Fatalf("cut %+v", cp)
	}
	if pi := FindCutPoint(path, 0, len(path), 100); pi.FirstKeptIndex != 0 {
		t.Fatalf("the reference's rule keeps everything; got %+v", pi)
	}
}

func TestFindCutPoint(t *testing.T) {
	type want struct {
		kept      string // id of the first kept entry ("" = index 0)
		turnStart string // "" = none
	}
	tests := []struct {
		name  string
		build func(b *builder) (keep int, w want)
	}{
		{"total under budget keeps everything", func(b *builder) (int, want) {
			u := b.user(10)
			b.assistant(10)
			return 1000, want{kept: u}
		}},
		{"clean cut at a user message", func(b *builder) (int, want) {
			b.user(100)
			b.assistant(100)
			u2 := b.user(100)
			b.assistant(100)
			return 150, want{kept: u2}
		}},
		{"cut inside a turn is split", func(b *builder) (int, want) {
			u1 := b.user(100)
			b.assistant(100, "c1:bash")
			b.result("c1", "bash", 100)
			a2 := b.assistant(100)
			return 150, want{kept: a2, turnStart: u1}
		}},
		{"a kept turn larger than the budget keeps its tail", func(b *builder) (int, want) {
			u1 := b.user(10)
			b.assistant(10, "c1:bash")
			b.result("c1", "bash", 5000)
			b.assistant(10, "c2:bash")
			b.result("c2", "bash", 5000)
			a3 := b.assistant(10)
			return 100, want{kept: a3, turnStart: u1}
		}},
		{"budget filled by a trailing tool result keeps everything, as pi does", func(b *builder) (int, want) {
			u1 := b.user(10)
			b.assistant(10)
			b.user(10)
			b.assistant(10, "c1:bash")
			b.result("c1", "bash", 5000)
			return 100, want{kept: u1}
		}},
		{"metadata before a user message is kept and the cut is clean (§4.4)", func(b *builder) (int, want) {
			b.user(100)
			b.assistant(100)
			m := b.modelChange()
			b.thinking()
			b.user(100)
			b.assistant(100)
			// pi reports this as a split turn whose prefix is the previous
			// turn; Pith decides from the first message (the user message).
			return 150, want{kept: m}
		}},
		{"a cut at a bash run is clean (§4.4)", func(b *builder) (int, want) {
			b.user(100)
			b.assistant(100)
			x := b.bash(100)
			b.assistant(100)
			return 150, want{kept: x}
		}},
		{"a cut at a custom_message is clean (§4.4)", func(b *builder) (int, want) {
			b.user(100)
			b.assistant(100)
			b.assistant(1)
			c := b.customMessage(100)
			b.assistant(200)
			return 150, want{kept: c}
		}},
		{"a tool result is never kept without its call (§4.5)", func(b *builder) (int, want) {
			u1 := b.user(100)
			a1 := b.assistant(10, "c1:bash")
			b.bash(100) // a cut point between the call and its result
			b.result("c1", "bash", 1)
			b.assistant(1)
			return 50, want{kept: a1, turnStart: u1}
		}},
		{"the back-move stops at a compaction", func(b *builder) (int, want) {
			u1 := b.user(10)
			b.compaction(u1, "s", "")
			m := b.modelChange()
			b.user(10)
			return 5, want{kept: m}
		}},
		{"no cut point in range", func(b *builder) (int, want) {
			b.modelChange()
			b.thinking()
			return 5, want{}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &builder{}
			keep, w := tt.build(b)
			path := b.path(t)
			cp := FindCutPoint(path, 0, len(path), keep)
			wantKept := 0
			if w.kept != "" {
				wantKept = indexOf(t, path, w.kept)
			}
			wantTurn := -1
			if w.turnStart != "" {
				wantTurn = indexOf(t, path, w.turnStart)
			}
			if cp.FirstKeptIndex != wantKept || cp.TurnStartIndex != wantTurn || cp.IsSplitTurn != (wantTurn >= 0) {
				t.Fatalf("cut %+v, want kept %d turn start %d", cp, wantKept, wantTurn)
			}
			checkCut(t, path, 0, len(path), cp)
		})
	}
}

// checkCut asserts the invariants every cut must satisfy.
func checkCut(t *testing.T, path []*session.Entry, start, end int, cp CutPoint) {
	t.Helper()
	c := cp.FirstKeptIndex
	if c < start || c > end || (c == end && end > start) {
		t.Fatalf("cut %d outside [%d, %d)", c, start, end)
	}
	hasCutPoint := false
	for i := start; i < end; i++ {
		hasCutPoint = hasCutPoint || isCutPoint(path[i])
	}
	if hasCutPoint {
		if c < end && path[c].Role() == "toolResult" {
			t.Fatalf("cut at a tool result (%d)", c)
		}
	}
	if cp.IsSplitTurn != (cp.TurnStartIndex >= 0) {
		t.Fatalf("split %v with turn start %d", cp.IsSplitTurn, cp.TurnStartIndex)
	}
	if cp.IsSplitTurn && (cp.TurnStartIndex < start || cp.TurnStartIndex >= c || !isTurnStart(path[cp.TurnStartIndex])) {
		t.Fatalf("turn start %d invalid for cut %d", cp.TurnStartIndex, c)
	}
	calls := map[string]bool{}
	for i := start; i < c; i++ {
		for _, id := range toolCallIDs(path[i]) {
			calls[id] = true
		}
	}
	for i := c; i < end; i++ {
		if path[i].Role() == "toolResult" {
			if id := path[i].Get("message.toolCallId").String(); calls[id] {
				t.Fatalf("kept tool result %d answers call %s made before the cut %d", i, id, c)
			}
		}
	}
}
