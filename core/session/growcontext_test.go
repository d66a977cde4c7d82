package session

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestBuildContextAsTheTreeGrows is the daemon's pattern: an entry added,
// then the context of the new leaf (or of an older one), on one tree that
// keeps its memo. Every context equals the one a fresh tree builds:
// messages, thinking level, model, the compaction's place and the path,
// through model and thinking changes, assistant messages naming models,
// compactions and branches.
func TestBuildContextAsTheTreeGrows(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 13))
		f := randomSession(t, rng, 250, false)
		tree := NewTree(nil)
		for i, e := range f.Entries {
			tree.Add(e)
			leafID := LeafDefault
			if rng.IntN(5) == 0 {
				leafID = f.Entries[rng.IntN(i+1)].ID
			}
			got := tree.BuildContext(leafID)
			want := NewTree(slices.Clone(tree.Entries)).BuildContext(leafID)
			if !reflect.DeepEqual(got.Messages, want.Messages) || got.ThinkingLevel != want.ThinkingLevel ||
				!reflect.DeepEqual(got.Model, want.Model) || got.SinceCompaction != want.SinceCompaction ||
				!slices.Equal(got.Path, want.Path) {
				t.Fatalf("seed %d, after %d entries, leaf %q: the growing tree's context differs from a fresh tree's\n got thinking %q model %v since %d, %d messages\nwant thinking %q model %v since %d, %d messages",
					seed, i+1, leafID, got.ThinkingLevel, got.Model, got.SinceCompaction, len(got.Messages), want.ThinkingLevel, want.Model, want.SinceCompaction, len(want.Messages))
			}
		}
	}
}
