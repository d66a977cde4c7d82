package viewer

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
)

// TestExtendMatchesWhole: after random appends — chains under the leaf,
// entries under an older entry, labels, repeated and forward ids — the
// snapshot extended from the last one is the one built whole, or extend
// declines.
func TestExtendMatchesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := sessiongen.GenerateFile(path, sessiongen.Benchmark(7, 300)); err != nil {
		t.Fatal(err)
	}
	h := quietHandler(t, path)
	rng := rand.New(rand.NewPCG(1, 2))
	extended := 0
	for i := range 300 {
		s := h.snap.Load()
		ids := s.file.Entries
		var add string
		leaf := h.LeafID()
		switch k := rng.IntN(10); {
		case k < 6: // a chain under the leaf
			for j := range 1 + rng.IntN(3) {
				id := fmt.Sprintf("n%d-%d", i, j)
				add += entryLine(id, leaf, "more")
				leaf = id
			}
		case k == 6: // a branch, as pi makes one: under an entry of the leaf's path
			path := s.tree.Path(s.leaf)
			add = entryLine(fmt.Sprintf("n%d", i), path[rng.IntN(len(path))].ID, "branch")
		case k == 9 && rng.IntN(4) == 0: // under any older entry
			add = entryLine(fmt.Sprintf("o%d", i), ids[rng.IntN(len(ids))].ID, "elsewhere")
		case k == 7: // a label
			add = fmt.Sprintf(`{"type":"label","id":"l%d","parentId":%q,"timestamp":"2026-01-01T00:00:01.000Z","targetId":%q,"label":"x"}`+"\n", i, leaf, ids[rng.IntN(len(ids))].ID)
		case k == 8: // a repeated id under the leaf
			add = entryLine(ids[rng.IntN(len(ids))].ID, leaf, "again")
		case k == 9: // an entry whose parent comes later, then that parent
			add = entryLine(fmt.Sprintf("c%d", i), fmt.Sprintf("p%d", i), "early") + entryLine(fmt.Sprintf("p%d", i), leaf, "late")
		}
		appendTo(t, path, add)
		if err := h.reload(false); err != nil {
			t.Fatal(err)
		}
		got := h.snap.Load()
		if got.extendedFrom(s) {
			extended++
		}
		want := newSnapshot(got.file, got.version)
		if !sameSnapshot(got, want) {
			t.Fatalf("append %d (%q): the extended snapshot differs from the whole one", i, add)
		}
	}
	t.Logf("%d of 300 appends extended the last snapshot", extended)
	if extended == 0 {
		t.Fatal("no append was taken by extend")
	}
}

// extendedFrom reports whether s shares prev's labels map (extend keeps
// it; newSnapshot builds another).
func (s *snapshot) extendedFrom(prev *snapshot) bool {
	return reflect.ValueOf(s.labels).UnsafePointer() == reflect.ValueOf(prev.labels).UnsafePointer()
}

func sameSnapshot(a, b *snapshot) bool {
	if a.leaf != b.leaf || len(a.nodes) != len(b.nodes) || !reflect.DeepEqual(a.row, b.row) ||
		!reflect.DeepEqual(a.labels, b.labels) || len(a.onPath) != len(b.onPath) || a.appendable != b.appendable {
		return false
	}
	for i := range a.nodes {
		x, y := a.nodes[i], b.nodes[i]
		if x.Entry != y.Entry || x.Depth != y.Depth || x.Fork != y.Fork || !reflect.DeepEqual(x.Labels, y.Labels) {
			return false
		}
	}
	for e := range a.onPath {
		if !b.onPath[e] {
			return false
		}
	}
	return true
}
