package session

// Tree indexes a file's entries by id and parent. It is built once per
// loaded file and extended by Add as entries are appended.
type Tree struct {
	Entries  []*Entry
	byID     map[string]*Entry
	children map[string][]*Entry // built on first use
}

// NewTree indexes entries. When ids repeat, the last one wins, as with a
// JavaScript Map filled in file order.
func NewTree(entries []*Entry) *Tree {
	t := &Tree{Entries: entries, byID: make(map[string]*Entry, len(entries))}
	for _, e := range entries {
		if e.ID != "" {
			t.byID[e.ID] = e
		}
	}
	return t
}

// Add appends an entry to the index.
func (t *Tree) Add(e *Entry) {
	t.Entries = append(t.Entries, e)
	if e.ID != "" {
		t.byID[e.ID] = e
	}
	if t.children != nil {
		t.children[e.ParentID] = append(t.children[e.ParentID], e)
	}
}

// Get returns the entry with the id, or nil.
func (t *Tree) Get(id string) *Entry { return t.byID[id] }

// Has reports whether the id is in the tree.
func (t *Tree) Has(id string) bool { _, ok := t.byID[id]; return ok }

// Last is the last entry in file order, the default leaf (SPEC §1), or nil.
func (t *Tree) Last() *Entry {
	if len(t.Entries) == 0 {
		return nil
	}
	return t.Entries[len(t.Entries)-1]
}

// Children returns the entries whose parent is id, in file order; "" gives
// the roots.
func (t *Tree) Children(id string) []*Entry {
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
func (t *Tree) Path(leaf *Entry) []*Entry {
	if leaf == nil {
		return nil
	}
	var rev []*Entry
	for e := leaf; e != nil; e = t.byID[e.ParentID] {
		rev = append(rev, e)
		if e.ParentID == "" {
			break
		}
		if len(rev) > len(t.Entries) {
			// Longer than the file: the parent links loop.
			rev = cutCycle(rev)
			break
		}
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
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
