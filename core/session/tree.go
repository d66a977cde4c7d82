package session

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Tree indexes a file's entries by id and parent. The id index is built on
// first use: building a context for the last entry needs none, because an
// append-only file always has parents before children (see Path).
type Tree struct {
	Entries []*Entry

	indexOnce sync.Once
	byID      map[string]*Entry
	indexed   atomic.Bool         // byID is built
	repeated  atomic.Bool         // some id is on two entries (seen by the index)
	children  map[string][]*Entry // built on first use of Children
	mu        sync.Mutex          // guards children

	settingsMu sync.Mutex
	settings   map[*Entry]leafState // Settings' answers, bounded

	lastPath atomic.Pointer[pathMemo] // the last walk Path made (pathmemo.go)
}

// NewTree indexes entries. When ids repeat, the last one wins, as with a
// JavaScript Map filled in file order.
func NewTree(entries []*Entry) *Tree {
	return &Tree{Entries: entries}
}

func (t *Tree) index() map[string]*Entry {
	t.indexOnce.Do(func() {
		t.byID = make(map[string]*Entry, len(t.Entries))
		for _, e := range t.Entries {
			if e.ID != "" {
				if _, dup := t.byID[e.ID]; dup {
					t.repeated.Store(true)
				}
				t.byID[e.ID] = e
			}
		}
		t.indexed.Store(true)
	})
	return t.byID
}

// uniqueIDs says that no two entries share an id, when the id index is
// built (it is not for a one-shot read, and then this says false).
func (t *Tree) uniqueIDs() bool { return t.indexed.Load() && !t.repeated.Load() }

// lastWithID is Get without the id index: the last entry with the id, as
// the index keeps the last of repeated ids. Building the index hashes
// every id, about a tenth of pith context on a long session, to look up
// one leaf (and, for LeafDefault, usually to find none); a backward scan
// compares lengths first and finds the common leaf, a recent entry, at
// once.
func (t *Tree) lastWithID(id string) *Entry {
	for i := len(t.Entries) - 1; i >= 0; i-- {
		if e := t.Entries[i]; e.ID == id {
			return e
		}
	}
	return nil
}

// Add appends an entry to the index. It must not run concurrently with
// readers of the tree (the Store serializes it).
func (t *Tree) Add(e *Entry) {
	idx := t.index()
	m := t.lastPath.Load()
	valid := m.validIn(t.Entries)
	t.Entries = append(t.Entries, e)
	if valid && m.entries != &t.Entries[0] {
		t.lastPath.Store(m.movedTo(t.Entries))
	}
	if e.ID != "" {
		if _, dup := idx[e.ID]; dup {
			t.repeated.Store(true)
			t.forgetSettings()
		}
		idx[e.ID] = e
	}
	t.mu.Lock()
	if t.children != nil {
		t.children[e.ParentID] = append(t.children[e.ParentID], e)
	}
	t.mu.Unlock()
}

// Get returns the entry with the id, or nil.
func (t *Tree) Get(id string) *Entry { return t.index()[id] }

// Has reports whether the id is in the tree.
func (t *Tree) Has(id string) bool { _, ok := t.index()[id]; return ok }

// Last is the last entry in file order, the default leaf (docs/behaviour.md §1), or nil.
func (t *Tree) Last() *Entry {
	if len(t.Entries) == 0 {
		return nil
	}
	return t.Entries[len(t.Entries)-1]
}

// Children returns the entries whose parent is id, in file order; "" gives
// the entries with no parent.
func (t *Tree) Children(id string) []*Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.children == nil {
		t.children = make(map[string][]*Entry, len(t.Entries))
		for _, e := range t.Entries {
			t.children[e.ParentID] = append(t.children[e.ParentID], e)
		}
	}
	return t.children[id]
}

// Path returns the entries from the root to leaf (inclusive). A parent id
// that is missing ends the walk there; a cycle is cut at the first repeat.
// The slice may be shared with other callers (see pathMemo): it must not
// be modified; it has no spare capacity, so appending to it copies.
//
// In an append-only file a parent comes before its children, so the walk
// searches backwards from the child's position: every entry is looked at
// at most once, with no hashing, which keeps BuildContext on a 100 000-entry
// session to a few milliseconds. Only a parent that is not found before its
// child (a file edited by hand) falls back to the id index. With duplicate
// ids (which the format forbids) the nearest earlier entry is the parent.
func (t *Tree) Path(leaf *Entry) []*Entry {
	if leaf == nil {
		return nil
	}
	es := t.Entries
	i := len(es) - 1
	for i >= 0 && es[i] != leaf {
		i--
	}
	if i < 0 {
		return t.pathByIndex(leaf)
	}
	if m := t.lastPath.Load(); m.validIn(es) {
		if m.at == i {
			return m.result()
		}
		if next := m.extendTo(es, i); next != nil {
			t.lastPath.Store(next)
			return next.result()
		}
	}
	path, rooted, ok := walkBack(es, i, t.index)
	if !ok {
		return t.pathByIndex(leaf)
	}
	if !rooted {
		// It ends at a parent id no entry has yet: one added later
		// changes the answer, so it is not kept.
		return path
	}
	m := newPathMemo(es, leaf, i, path)
	t.lastPath.Store(m)
	return m.result()
}

// walkBack is Path's walk from es[i] through earlier entries, rooted when
// it ends at an entry without a parent (not at a missing one), or not ok
// when a parent comes after its child and the walk must use the index.
func walkBack(es []*Entry, i int, index func() map[string]*Entry) (path []*Entry, rooted, ok bool) {
	// Each step goes to an earlier entry, so the path has at most i+1:
	// filled from the back of one slice of that size, it needs neither
	// growing nor reversing.
	path = make([]*Entry, i+1)
	k := len(path)
	for {
		e := es[i]
		k--
		path[k] = e
		if e.ParentID == "" {
			rooted = true
			break
		}
		j := i - 1
		for j >= 0 && es[j].ID != e.ParentID {
			j--
		}
		if j < 0 {
			if index()[e.ParentID] == nil {
				break // a dangling parent id ends the path here
			}
			// The parent comes after its child: not an append-only file.
			// Walk it the general way.
			return nil, false, false
		}
		i = j
	}
	return path[k:len(path):len(path)], rooted, true
}

// pathByIndex walks parent links through the id index, the general case.
func (t *Tree) pathByIndex(leaf *Entry) []*Entry {
	idx := t.index()
	var rev []*Entry
	for e := leaf; e != nil; e = idx[e.ParentID] {
		rev = append(rev, e)
		if e.ParentID == "" {
			break
		}
		if len(rev) > len(t.Entries) {
			rev = cutCycle(rev) // longer than the file: the links loop
			break
		}
	}
	return slices.Clip(reverseInto(rev))
}

func reverseInto(s []*Entry) []*Entry {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return s
}

// cutCycle keeps the walk up to the first entry seen twice.
func cutCycle(rev []*Entry) []*Entry {
	seen := make(map[*Entry]bool, len(rev))
	for i, e := range rev {
		if seen[e] {
			return rev[:i]
		}
		seen[e] = true
	}
	return rev
}

// CommonAncestor returns the deepest entry on both a's and b's paths, or
// nil when they share none.
func (t *Tree) CommonAncestor(a, b *Entry) *Entry {
	onA := make(map[*Entry]bool)
	for _, e := range t.Path(a) {
		onA[e] = true
	}
	pb := t.Path(b)
	for i := len(pb) - 1; i >= 0; i-- {
		if onA[pb[i]] {
			return pb[i]
		}
	}
	return nil
}

// Roots returns the entries a walk down the tree starts from, in file
// order: those without a parent or whose parent is missing, then one entry
// of each parentId loop (see Cycles), so that walking Children from them
// reaches every entry — a loop has no root of its own.
func (t *Tree) Roots() []*Entry {
	var roots []*Entry
	for _, e := range t.Entries {
		if e.ParentID == "" || !t.Has(e.ParentID) {
			roots = append(roots, e)
		}
	}
	loops, _ := t.Cycles()
	return append(roots, loops...)
}

// Cycles finds the loops of parentId links (a file edited by hand or
// forged: pi never writes one). For each loop it returns the entry where a
// walk in file order first came back to itself, and the loop's length.
// Readers survive a loop — Path cuts it — but it leaves its entries with no
// root, so callers report it (CycleWarnings) rather than show nothing.
//
// The common case costs one lookup per entry: a loop needs some entry
// whose parent does not come before it in the file, and without one there
// is nothing to walk.
func (t *Tree) Cycles() (at []*Entry, length []int) {
	idx := t.index()
	suspect := false
	for i, e := range t.Entries {
		if e.ParentID == "" {
			continue
		}
		if p := idx[e.ParentID]; p != nil && (p.Line >= e.Line || e.Line == 0 || i == 0) {
			suspect = true
			break
		}
	}
	if !suspect {
		return nil, nil
	}
	// Walk each entry's ancestors, marking them with the walk that first
	// reached them: reaching an entry of an earlier walk ends the walk (its
	// ancestors are known), reaching one of this walk closes a loop.
	walk := make(map[*Entry]int, len(t.Entries))
	for n, start := range t.Entries {
		if walk[start] != 0 {
			continue
		}
		id := n + 1
		for e := start; e != nil; e = idx[e.ParentID] {
			if w := walk[e]; w != 0 {
				if w == id {
					at, length = append(at, e), append(length, t.loopLen(e))
				}
				break
			}
			walk[e] = id
			if e.ParentID == "" {
				break
			}
		}
	}
	return at, length
}

// loopLen is the number of entries on the parentId loop through e.
func (t *Tree) loopLen(e *Entry) int {
	idx := t.index()
	n := 1
	for p := idx[e.ParentID]; p != e; p = idx[p.ParentID] {
		n++
	}
	return n
}

// PathCycle reports the parentId loop that cut path, a result of Path: the
// entry on the loop where the walk came back, and the loop's length; nil
// when the path was not cut. It costs nothing for a path that starts at a
// root, so `pith context` checks only the loop that matters to it.
func (t *Tree) PathCycle(path []*Entry) (at *Entry, length int) {
	if len(path) == 0 || path[0].ParentID == "" {
		return nil, 0
	}
	// Path stops below a parent only when the parent is missing (a
	// dangling id: no loop) or already on the walk (a loop).
	if r := t.Get(path[0].ParentID); r != nil {
		return r, t.loopLen(r)
	}
	return nil, 0
}
