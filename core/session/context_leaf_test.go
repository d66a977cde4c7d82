package session_test

import (
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestBuildContextLeafRepeatedID pins what the id index answered before
// BuildContext stopped building it: of entries with the same id the last
// one is the leaf, and an id no entry has (LeafDefault among them) means
// the last entry.
func TestBuildContextLeafRepeatedID(t *testing.T) {
	data := []byte(`{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"two","timestamp":2}}
{"type":"message","id":"a","parentId":"b","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"three","timestamp":3}}
{"type":"message","id":"c","parentId":"b","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"four","timestamp":4}}
`)
	f, err := session.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	tree := session.NewTree(f.Entries)
	for _, tc := range []struct {
		leaf string
		want *session.Entry
	}{
		{"a", f.Entries[2]},
		{"b", f.Entries[1]},
		{"zz", f.Entries[3]},
		{session.LeafDefault, f.Entries[3]},
	} {
		got := session.NewTree(f.Entries).BuildContext(tc.leaf).Leaf
		if got != tc.want {
			t.Errorf("leaf %q: got line %d, want line %d", tc.leaf, got.Line, tc.want.Line)
		}
		if indexed := tree.Get(tc.leaf); indexed != nil && indexed != got {
			t.Errorf("leaf %q: BuildContext and Get disagree", tc.leaf)
		}
	}
}
