package session

import "sync/atomic"

// pathMemo is the last path Path walked, kept so that the next call for a
// descendant of its leaf walks only the entries in between. A daemon
// appends under the leaf and then builds the context of the new leaf, on
// every turn: a whole walk from the leaf to the root made each turn cost
// more as the session grew (an eighth of the daemon's CPU late in a
// minute of appends), while the part above the old leaf is the same walk
// every time.
//
// It holds only a walk that went back through the file without the id
// index and ended at a root (walkBack), so that what it saves is exactly
// what walkBack would do again: entries added later cannot change such a
// walk, while one that ended at a missing parent changes when the parent
// comes. A memo is never changed once stored.
type pathMemo struct {
	entries **Entry // &Entries[0] when it was made: the same slice
	leaf    *Entry
	at      int // leaf's position in Entries

	// path is Path(leaf), in an array that may be longer (cap): the
	// entries of a descendant's path are written after it in place, by
	// the first extension to claim those slots (written), so that a turn
	// costs the entries it added, not a copy of the whole path.
	path    []*Entry
	written *atomic.Int64 // slots of path's array in use

	facts atomic.Pointer[pathFacts] // what BuildContext reads of path, once known
}

// pathFacts is what BuildContext takes from a whole path besides its
// messages: the last thinking level and model named on it, and where its
// last compaction is. Kept with a memo, a descendant's facts are the
// memo's updated with the entries between, not a scan from the root.
type pathFacts struct {
	thinking     string
	haveThinking bool
	model        ModelRef // the last one named: kept by value, not per message
	haveModel    bool
	compactionAt int // index on the path, -1 without one
}

func newPathFacts() pathFacts { return pathFacts{compactionAt: -1} }

// add updates f with entries, the path's entries from index at on.
func (f *pathFacts) add(entries []*Entry, at int) {
	for i, e := range entries {
		switch e.Type {
		case TypeThinkingLevelChange:
			f.thinking, f.haveThinking = e.Get("thinkingLevel").String(), true
		case TypeModelChange:
			f.model, f.haveModel = ModelRef{Provider: e.Get("provider").String(), ModelID: e.Get("modelId").String()}, true
		case TypeMessage:
			if e.Role() == RoleAssistant {
				p, m := e.MessageModel()
				f.model, f.haveModel = ModelRef{Provider: p, ModelID: m}, true
			}
		case TypeCompaction:
			f.compactionAt = at + i
		}
	}
}

// factsOf is m's facts, made from its whole path the first time.
func (m *pathMemo) factsOf() pathFacts {
	if f := m.facts.Load(); f != nil {
		return *f
	}
	f := newPathFacts()
	f.add(m.path, 0)
	m.facts.Store(&f)
	return f
}

// pathAndFacts is Path(leaf) and its facts, from the memo when Path made
// or used one for this leaf (another reader may have replaced it since).
func (t *Tree) pathAndFacts(leaf *Entry) ([]*Entry, pathFacts) {
	path := t.Path(leaf)
	if m := t.lastPath.Load(); m != nil && m.leaf == leaf && len(m.path) == len(path) && len(path) > 0 && &m.path[0] == &path[0] {
		return path, m.factsOf()
	}
	f := newPathFacts()
	f.add(path, 0)
	return path, f
}

// validIn says whether m was made on entries: the same array, its leaf
// still at its place. Entries only grow through Add (which moves the
// memo along when the array moves), but the field is exported, and a
// slice replaced by another must not be answered from the old one.
func (m *pathMemo) validIn(es []*Entry) bool {
	return m != nil && len(es) > 0 && m.entries == &es[0] && m.at < len(es) && es[m.at] == m.leaf
}

// movedTo is m for entries, the same slice grown into a new array.
func (m *pathMemo) movedTo(es []*Entry) *pathMemo {
	moved := &pathMemo{entries: &es[0], leaf: m.leaf, at: m.at, path: m.path, written: m.written}
	if f := m.facts.Load(); f != nil {
		moved.facts.Store(f)
	}
	return moved
}

// result is the path as callers get it: no spare capacity, so that an
// append of theirs copies instead of writing into the shared array.
func (m *pathMemo) result() []*Entry { return m.path[:len(m.path):len(m.path)] }

func newPathMemo(es []*Entry, leaf *Entry, at int, path []*Entry) *pathMemo {
	written := new(atomic.Int64)
	written.Store(int64(len(path)))
	return &pathMemo{entries: &es[0], leaf: leaf, at: at, path: path, written: written}
}

// extendTo is the memo of Path(es[i]) when the walk back from es[i]
// reaches m's leaf without leaving the entries after it: m's path, then
// the entries between. Otherwise nil (es[i] is not below m's leaf, or the
// walk needs the index), at the cost of looking at the entries after m's
// leaf once.
func (m *pathMemo) extendTo(es []*Entry, i int) *pathMemo {
	leaf, at := es[i], i
	if i <= m.at {
		return nil
	}
	var buf [16]*Entry
	below := buf[:0] // from es[i] up, m's leaf excluded
	for i != m.at {
		e := es[i]
		if e.ParentID == "" {
			return nil
		}
		below = append(below, e)
		j := i - 1
		for j >= m.at && es[j].ID != e.ParentID {
			j--
		}
		if j < m.at {
			return nil
		}
		i = j
	}
	n := len(m.path)
	total := n + len(below)
	var path []*Entry
	written := m.written
	if total <= cap(m.path) && written.CompareAndSwap(int64(n), int64(total)) {
		// The slots after m's path are this extension's: nobody holds a
		// path that covers them.
		path = m.path[:total]
	} else {
		// Another extension has the slots (a sibling branch), or the
		// array is full: a new array, with room to grow into.
		path = make([]*Entry, total, max(2*total, 64))
		copy(path, m.path)
		written = new(atomic.Int64)
		written.Store(int64(total))
	}
	for k := len(below) - 1; k >= 0; k-- {
		path[n] = below[k]
		n++
	}
	next := &pathMemo{entries: m.entries, leaf: leaf, at: at, path: path, written: written}
	if f := m.facts.Load(); f != nil {
		facts := *f
		facts.add(path[len(m.path):], len(m.path))
		next.facts.Store(&facts)
	}
	return next
}
