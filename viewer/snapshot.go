package viewer

import (
	"maps"
	"slices"

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
	// appendable: the last row is the leaf, it has no children, and no
	// entry names a parent that is missing — so a chain appended under
	// the leaf only adds rows at the end (see extend).
	appendable bool
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
	s.appendable = s.leaf != nil && s.nodes[len(s.nodes)-1].Entry == s.leaf && len(tree.Children(s.leaf.ID)) == 0
	for _, e := range f.Entries {
		if !s.appendable {
			break
		}
		s.appendable = e.ParentID == "" || tree.Has(e.ParentID)
	}
	return s
}

// extend is the snapshot of f, which is s's file with entries appended,
// built from s without walking the whole tree again: when each appended
// entry is the child of the one before (the first of s's leaf), with a
// new id, and is no label, the new entries are rows at the end of the
// layout at the leaf's depth and the new leaf's path is s's and them —
// what newSnapshot would find. Otherwise it returns nil: build it whole.
func (s *snapshot) extend(f *session.File, version int64) *snapshot {
	if !s.appendable || len(f.Entries) <= len(s.file.Entries) {
		return nil
	}
	added := f.Entries[len(s.file.Entries):]
	last := s.leaf
	seen := make(map[string]bool, len(added))
	for _, e := range added {
		_, dup := s.row[e.ID]
		_, labelled := s.labels[e.ID]
		if e.ID == "" || e.ParentID != last.ID || e.Type == session.TypeLabel || dup || labelled || seen[e.ID] {
			return nil
		}
		seen[e.ID] = true
		last = e
	}
	n := &snapshot{version: version, file: f, tree: session.NewTree(f.Entries), leaf: last, labels: s.labels, appendable: true}
	depth := s.nodes[len(s.nodes)-1].Depth
	n.nodes = slices.Clip(s.nodes)
	n.row = maps.Clone(s.row)
	n.onPath = maps.Clone(s.onPath)
	for _, e := range added {
		n.row[e.ID] = len(n.nodes)
		n.nodes = append(n.nodes, entryview.Node{Entry: e, Depth: depth})
		n.onPath[e] = true
	}
	return n
}
