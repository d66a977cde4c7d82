package session

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestKeptFromMatchesTheScan: a context built on an indexed tree (whose
// kept entries are found from the end) equals the one built on a fresh
// tree (found from the root), for sessions with compactions, branches,
// kept ids that are missing and, in some, a repeated id.
func TestKeptFromMatchesTheScan(t *testing.T) {
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 11))
		f := randomSession(t, rng, 200, seed%4 == 0)
		indexed := NewTree(f.Entries)
		indexed.Get("e000")
		for _, leaf := range f.Entries[len(f.Entries)-20:] {
			got := indexed.BuildContext(leaf.ID)
			want := NewTree(f.Entries).BuildContext(leaf.ID)
			if !reflect.DeepEqual(got.Messages, want.Messages) || got.SinceCompaction != want.SinceCompaction {
				t.Fatalf("seed %d, leaf %s: %d messages (%d since the compaction), a scan from the root gives %d (%d)",
					seed, leaf.ID, len(got.Messages), got.SinceCompaction, len(want.Messages), want.SinceCompaction)
			}
		}
	}
}
