package session

import (
	"bytes"
	"fmt"
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
		var buf bytes.Buffer
		buf.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"x","cwd":"/"}` + "\n")
		var ids []string
		for i := range 250 {
			id := fmt.Sprintf("e%03d", i)
			parent := "null"
			if len(ids) > 0 {
				p := ids[len(ids)-1]
				if rng.IntN(10) == 0 {
					p = ids[rng.IntN(len(ids))]
				}
				parent = `"` + p + `"`
			}
			head := fmt.Sprintf(`"id":"%s","parentId":%s,"timestamp":"x"`, id, parent)
			switch r := rng.IntN(20); {
			case r == 0:
				fmt.Fprintf(&buf, `{"type":"thinking_level_change",%s,"thinkingLevel":"t%d"}`+"\n", head, i)
			case r == 1:
				fmt.Fprintf(&buf, `{"type":"model_change",%s,"provider":"p%d","modelId":"m%d"}`+"\n", head, i, i)
			case r == 2 && len(ids) > 3:
				fmt.Fprintf(&buf, `{"type":"compaction",%s,"summary":"s%d","firstKeptEntryId":"%s","tokensBefore":1}`+"\n", head, i, ids[len(ids)-1-rng.IntN(3)])
			case r < 10:
				fmt.Fprintf(&buf, `{"type":"message",%s,"message":{"role":"assistant","content":[{"type":"text","text":"a%d"}],"provider":"ap%d","model":"am%d"}}`+"\n", head, i, i%3, i%3)
			default:
				fmt.Fprintf(&buf, `{"type":"message",%s,"message":{"role":"user","content":"u%d"}}`+"\n", head, i)
			}
			ids = append(ids, id)
		}
		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
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
