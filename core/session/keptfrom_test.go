package session

import (
	"bytes"
	"fmt"
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
		var buf bytes.Buffer
		buf.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"x","cwd":"/"}` + "\n")
		var ids []string
		for i := range 200 {
			id := fmt.Sprintf("e%03d", i)
			if seed%4 == 0 && i > 0 && rng.IntN(40) == 0 {
				id = ids[rng.IntN(len(ids))] // a repeated id
			}
			parent := "null"
			if len(ids) > 0 {
				p := ids[len(ids)-1]
				if rng.IntN(8) == 0 {
					p = ids[rng.IntN(len(ids))]
				}
				parent = `"` + p + `"`
			}
			if len(ids) > 4 && rng.IntN(15) == 0 {
				kept := ids[len(ids)-1-rng.IntN(4)]
				if rng.IntN(10) == 0 {
					kept = "missing"
				}
				fmt.Fprintf(&buf, `{"type":"compaction","id":"%s","parentId":%s,"timestamp":"x","summary":"s%d","firstKeptEntryId":"%s","tokensBefore":1}`+"\n", id, parent, i, kept)
			} else {
				fmt.Fprintf(&buf, `{"type":"message","id":"%s","parentId":%s,"timestamp":"x","message":{"role":"user","content":"m%d"}}`+"\n", id, parent, i)
			}
			ids = append(ids, id)
		}
		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
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
