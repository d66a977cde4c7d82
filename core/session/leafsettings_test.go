package session

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// naiveSettings is the walk Tree.Settings replaced: leaf to root on every
// call, nearest value wins.
func naiveSettings(t *Tree, leaf *Entry) Settings {
	var st leafState
	steps := len(t.Entries) + 1
	for e := leaf; e != nil && !(st.haveModel && st.haveThinking) && steps > 0; steps-- {
		switch e.Type {
		case TypeThinkingLevelChange:
			if !st.haveThinking {
				st.thinking, st.haveThinking = e.Get("thinkingLevel").String(), true
			}
		case TypeModelChange:
			if !st.haveModel {
				st.provider, st.model, st.haveModel = e.Get("provider").String(), e.Get("modelId").String(), true
			}
		case TypeMessage:
			if !st.haveModel && e.Role() == RoleAssistant {
				st.provider, st.model = e.MessageModel()
				st.haveModel = true
			}
		}
		if e.ParentID == "" {
			break
		}
		e = t.Get(e.ParentID)
	}
	return st.settings()
}

func settingsLine(i int, parent string, r *rand.Rand) string {
	id := fmt.Sprintf("e%05d", i)
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	head := `{"id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-01T00:00:00.000Z",`
	switch r.IntN(6) {
	case 0:
		return head + fmt.Sprintf(`"type":"model_change","provider":"p%d","modelId":"m%d"}`, i%3, i)
	case 1:
		return head + fmt.Sprintf(`"type":"thinking_level_change","thinkingLevel":"t%d"}`, i)
	case 2:
		return head + fmt.Sprintf(`"type":"message","message":{"role":"assistant","provider":"q","model":"a%d","content":[]}}`, i)
	default:
		return head + `"type":"message","message":{"role":"user","content":"hi"}}`
	}
}

// TestSettingsMatchesWalk asks for the settings of every entry of random
// trees, in random order and twice, after additions and after an id is
// reused, and compares each answer with the full walk.
func TestSettingsMatchesWalk(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 0))
		var buf bytes.Buffer
		buf.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n")
		n := 50 + r.IntN(300)
		for i := 0; i < n; i++ {
			parent := ""
			if i > 0 && r.IntN(20) > 0 {
				parent = fmt.Sprintf("e%05d", max(0, i-1-r.IntN(min(i, 5))))
			}
			buf.WriteString(settingsLine(i, parent, r) + "\n")
		}
		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		tree := NewTree(f.Entries)
		check := func(what string) {
			for _, k := range r.Perm(len(tree.Entries)) {
				e := tree.Entries[k]
				if got, want := tree.Settings(e), naiveSettings(tree, e); got != want {
					t.Fatalf("seed %d %s: %s: got %+v, want %+v", seed, what, e.ID, got, want)
				}
			}
		}
		check("first")
		check("cached")
		// An addition that reuses an id redirects the walks through it.
		for i := 0; i < 5; i++ {
			g, err := Parse([]byte(`{"type":"session","version":3,"id":"s","timestamp":"x","cwd":"/"}` + "\n" +
				settingsLine(r.IntN(n), fmt.Sprintf("e%05d", r.IntN(n)), r) + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			tree.Add(g.Entries[0])
			check(fmt.Sprintf("after reuse %d", i))
		}
		if got := tree.Settings(nil); got != (Settings{ThinkingLevel: "off"}) {
			t.Fatalf("nil leaf: %+v", got)
		}
	}
}

// BenchmarkSettingsAppend is a daemon's pattern: append an entry under the
// leaf, then ask for the leaf's settings. The model and thinking level are
// set only at the root, the worst case for a walk; the cost per call must
// not grow with the session (compare the 1k and 100k figures).
// "walk" is the full walk it replaced, for comparison.
func BenchmarkSettingsAppend(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"cached", 1_000}, {"cached", 100_000}, {"walk", 1_000}, {"walk", 100_000}} {
		size := c.size
		settings := (*Tree).Settings
		if c.name == "walk" {
			settings = naiveSettings
		}
		b.Run(fmt.Sprintf("%s/entries=%d", c.name, size), func(b *testing.B) {
			var buf bytes.Buffer
			buf.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"x","cwd":"/"}` + "\n")
			buf.WriteString(`{"type":"model_change","id":"e00000","parentId":null,"timestamp":"x","provider":"p","modelId":"m"}` + "\n")
			buf.WriteString(`{"type":"thinking_level_change","id":"e00001","parentId":"e00000","timestamp":"x","thinkingLevel":"high"}` + "\n")
			for i := 2; i < size; i++ {
				fmt.Fprintf(&buf, `{"type":"message","id":"e%05d","parentId":"e%05d","timestamp":"x","message":{"role":"user","content":"hi"}}`+"\n", i, i-1)
			}
			f, err := Parse(buf.Bytes())
			if err != nil {
				b.Fatal(err)
			}
			tree := NewTree(f.Entries)
			leaf := tree.Last()
			tree.Settings(leaf)
			next := make([]*Entry, 0, b.N)
			for i := range b.N {
				e := &Entry{Type: TypeMessage, ID: fmt.Sprintf("n%d", i)}
				next = append(next, e)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				e := next[i]
				e.ParentID = leaf.ID
				tree.Add(e)
				if s := settings(tree, e); s.Model != "m" || s.ThinkingLevel != "high" {
					b.Fatalf("settings %+v", s)
				}
				leaf = e
			}
		})
	}
}
