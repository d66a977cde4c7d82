package compaction

import (
	"errors"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestPrepareGivenCut: Settings.FirstKeptEntryID (pi's cut, honoured by
// compaction.honourPiCut) is the cut whatever keepRecentTokens says: at a
// user message the turn is whole, at an assistant message it is split; a
// tool result, or an entry that is not on the compacted range, is refused.
func TestPrepareGivenCut(t *testing.T) {
	f, err := session.Load("../../examples/demo-session.jsonl")
	if err != nil {
		t.Skip(err)
	}
	tree := session.NewTree(f.Entries)
	path := tree.Path(tree.Last())
	var user, assistant, result string
	for i, e := range path {
		if i < 3 || i > len(path)-3 {
			continue
		}
		switch e.Role() {
		case session.RoleUser:
			user = cmpOr(user, e.ID)
		case session.RoleAssistant:
			if user != "" {
				assistant = cmpOr(assistant, e.ID)
			}
		case session.RoleToolResult:
			result = cmpOr(result, e.ID)
		}
	}
	st := DefaultSettings()
	for _, tc := range []struct {
		id    string
		split bool
	}{{user, false}, {assistant, true}} {
		st.FirstKeptEntryID = tc.id
		prep, err := Prepare(path, st)
		if err != nil {
			t.Fatalf("cut at %s: %v", tc.id, err)
		}
		if prep.FirstKeptEntryID != tc.id || prep.IsSplitTurn() != tc.split {
			t.Errorf("cut at %s: kept from %s, split %v", tc.id, prep.FirstKeptEntryID, prep.IsSplitTurn())
		}
	}
	for _, id := range []string{result, "not-an-entry"} {
		st.FirstKeptEntryID = id
		if _, err := Prepare(path, st); !errors.Is(err, ErrCutRefused) {
			t.Errorf("cut at %s: %v, want ErrCutRefused", id, err)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
