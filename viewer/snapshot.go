package viewer

import (
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/entryview"
)

// snapshot is one reading of the session file, immutable once built, so
// every request works on a consistent view while a reload builds the next.
type snapshot struct {
	version int64
	file    *session.File
	tree    *session.Tree
	nodes   []entryview.Node
	row     map[string]int // entry id → index in nodes
	leaf    *session.Entry
	onPath  map[*session.Entry]bool
	labels  map[string][]string
}

func newSnapshot(f *session.File, version int64) *snapshot {
	tree := session.NewTree(f.Entries)
	s := &snapshot{version: version, file: f, tree: tree, nodes: entryview.Layout(tree), leaf: tree.Last()}
	s.row = make(map[string]int, len(s.nodes))
	s.labels = map[string][]string{}
	for i, n := range s.nodes {
		if n.Entry.ID != "" {
			s.row[n.Entry.ID] = i
		}
		if len(n.Labels) > 0 {
			s.labels[n.Entry.ID] = n.Labels
		}
	}
	path := tree.Path(s.leaf)
	s.onPath = make(map[*session.Entry]bool, len(path))
	for _, e := range path {
		s.onPath[e] = true
	}
	return s
}
