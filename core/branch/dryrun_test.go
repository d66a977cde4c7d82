package branch

import (
	"encoding/json"
	"testing"
)

func TestDryRun(t *testing.T) {
	tree := generatedTree(t, "gen-000.jsonl")
	checked := 0
	for _, g := range loadPiCases(t) {
		if g.File != "gen-000.jsonl" {
			continue
		}
		r := DryRun(tree, g.OldLeafID, g.TargetID, g.Budget)
		if (r.CommonAncestorID == nil) != (g.CommonAncestorID == nil) ||
			(r.CommonAncestorID != nil && *r.CommonAncestorID != *g.CommonAncestorID) ||
			r.EntriesToSummarize != g.EntriesToSummarize || r.Messages != g.Messages || r.Tokens != g.Tokens {
			t.Errorf("%s → %s budget %d: %+v, pi %+v", g.OldLeafID, g.TargetID, g.Budget, r, g)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no golden case for gen-000.jsonl")
	}

	// Nothing shared, nothing found: null ancestor and empty lists, not null.
	b, err := json.Marshal(DryRun(tree, "", "ffffffff", 0))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"oldLeafId":"","targetId":"ffffffff","commonAncestorId":null,"entriesToSummarize":0,"budget":0,"messages":0,"tokens":0,"readFiles":[],"modifiedFiles":[]}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
}
