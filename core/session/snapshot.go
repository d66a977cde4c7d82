package session

import (
	"fmt"
	"sync"
)

// Snapshot is a read-only Backend over a session read whole: the
// propose mode runs the compaction and navigation pipelines on a file
// another program owns and writes (pi, which takes no lock), so nothing
// may be written to it or beside it — not even a lock. Every write is
// refused with ErrReadOnly (and ErrUnchanged); the leaf can still move in
// memory, since the owner's leaf need not be the file's last entry.
type Snapshot struct {
	name string
	file *File
	tree *Tree

	mu   sync.Mutex
	leaf *Entry
}

var _ Backend = (*Snapshot)(nil)

// NewSnapshot is a Snapshot of f, named name in messages, with its leaf
// on the last entry.
func NewSnapshot(name string, f *File) *Snapshot {
	t := NewTree(f.Entries)
	return &Snapshot{name: name, file: f, tree: t, leaf: t.Last()}
}

// Path names the session for messages.
func (s *Snapshot) Path() string { return s.name }

// SidecarPath names a companion for messages; a Snapshot never opens one.
func (s *Snapshot) SidecarPath(suffix string) string { return SideName("", s.name, suffix) }

// File is the session as read.
func (s *Snapshot) File() *File { return s.file }

// Tree is the session's entries as read.
func (s *Snapshot) Tree() *Tree { return s.tree }

// Leaf is the entry the session is at, nil before the first.
func (s *Snapshot) Leaf() *Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaf
}

// SetLeaf moves the leaf in memory ("" before the first entry).
func (s *Snapshot) SetLeaf(id string) error {
	e, err := LeafAt(s.tree, s.name, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.leaf = e
	s.mu.Unlock()
	return nil
}

func (s *Snapshot) refuse() error {
	return fmt.Errorf("%s: %w (a snapshot: its owner writes it); %w", s.name, ErrReadOnly, ErrUnchanged)
}

// Append is refused.
func (s *Snapshot) Append(...Draft) ([]*Entry, error) { return nil, s.refuse() }

// AppendWith is refused.
func (s *Snapshot) AppendWith(func(*Tree, *Entry) (string, error), ...Draft) ([]*Entry, error) {
	return nil, s.refuse()
}

// Update is refused.
func (s *Snapshot) Update(func(*Tx) (*File, error)) error { return s.refuse() }
