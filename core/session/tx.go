package session

// Tx is a change to the session under its Backend's write rules (for a
// session file, its exclusive lock): the session as the Backend read it,
// and the sidecars next to it. Sidecar appends are undone when the change
// is not written.
type Tx struct {
	file *File
	tree *Tree
	leaf *Entry
	path string
	side Sidecars
}

// NewTx is the Tx a Backend's Update hands to a change: the session as
// the backend read it and its sidecars.
func NewTx(file *File, tree *Tree, leaf *Entry, path string, sidecars Sidecars) *Tx {
	return &Tx{file: file, tree: tree, leaf: leaf, path: path, side: sidecars}
}

// File is the session as the Backend read it; for a session file, bytes
// other writers appended since are carried over by the rewrite.
func (tx *Tx) File() *File { return tx.file }

// Tree is the index of File.
func (tx *Tx) Tree() *Tree { return tx.tree }

// Leaf is the Backend's leaf.
func (tx *Tx) Leaf() *Entry { return tx.leaf }

// Path is the session's path for messages.
func (tx *Tx) Path() string { return tx.path }

// ReadSidecar returns the sidecar with the suffix; nil when there is none.
func (tx *Tx) ReadSidecar(suffix string) ([]byte, error) { return tx.side.Read(suffix) }

// TruncateSidecar cuts the sidecar back to size (durably, for a file): a
// torn record at its end (a crash mid-append) is removed before the next
// one.
func (tx *Tx) TruncateSidecar(suffix string, size int64) error {
	return tx.side.Truncate(suffix, size)
}

// AppendSidecar appends data to the sidecar with the suffix, creating it,
// all or nothing. If the Update this Tx belongs to does not write the
// session, the sidecar is cut back again.
func (tx *Tx) AppendSidecar(suffix string, data []byte) error {
	return tx.side.Append(suffix, data)
}
