package main

import (
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/entryview"
)

// treeRow is one line of pith tree: an entry, or (node nil) a marker
// standing for hidden entries.
type treeRow struct {
	node   *entryview.Node
	hidden int // entries a marker stands for
	depth  int // a marker's indentation
	atEnd  bool
}

// treeLimits are --depth and --limit: a long session (thousands of
// entries) shown as much as is read.
type treeLimits struct {
	depth int // deepest branch level shown; < 0: all
	limit int // entries shown at most, the first ones; 0: all
}

// rows lays out nodes within the limits. Entries deeper than depth are
// hidden, except those on the path to the current leaf, and each run of
// hidden entries becomes one marker where it was; past limit entries, one
// marker at the end stands for the rest. It also returns how many
// entries are hidden in all.
func (l treeLimits) rows(tree *session.Tree, nodes []entryview.Node) ([]treeRow, int) {
	onPath := map[*session.Entry]bool{}
	if l.depth >= 0 {
		for _, e := range tree.Path(tree.Last()) {
			onPath[e] = true
		}
	}
	var rows []treeRow
	shown, hidden := 0, 0
	for i := range nodes {
		n := &nodes[i]
		if l.limit > 0 && shown == l.limit {
			rest := len(nodes) - i
			rows = append(rows, treeRow{hidden: rest, atEnd: true})
			hidden += rest
			break
		}
		if l.depth >= 0 && n.Depth > l.depth && !onPath[n.Entry] {
			if k := len(rows) - 1; k >= 0 && rows[k].node == nil {
				rows[k].hidden++
			} else {
				rows = append(rows, treeRow{hidden: 1, depth: l.depth + 1})
			}
			hidden++
			continue
		}
		rows = append(rows, treeRow{node: n})
		shown++
	}
	return rows, hidden
}
