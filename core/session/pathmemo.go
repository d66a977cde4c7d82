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
}

// validIn says whether m was made on entries: the same array, its leaf
// still at its place. Entries only grow through Add (which moves the
// memo along when the array moves), but the field is exported, and a
// slice replaced by another must not be answered from the old one.
func (m *pathMemo) validIn(es []*Entry) bool {
	return m != nil && len(es) > 0 && m.entries == &es[0] && m.at < len(es) && es[m.at] == m.leaf
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
	return &pathMemo{entries: m.entries, leaf: leaf, at: at, path: path, written: written}
}
