package session

import (
	"context"
	"errors"
)

// Backend is an open session the engine works on: its parsed entries, the
// leaf this process is on, and the writes the engine makes. A session
// file (*Store) is one; a session in a shared store (store.OpenSession)
// is another. Compaction, pruning and tree navigation take a Backend, so
// every backend gets the same rules.
type Backend interface {
	// Path names the session for messages (a file's path, a store's
	// session name).
	Path() string
	// SidecarPath names, for messages, the companion with the suffix
	// (the prune archive).
	SidecarPath(suffix string) string
	// File, Tree and Leaf are what this process has read; callers must
	// not modify them.
	File() *File
	Tree() *Tree
	Leaf() *Entry
	// SetLeaf moves the leaf in memory ("" moves it before the first
	// entry).
	SetLeaf(id string) error
	// Append writes drafts as a chain of new entries under Draft.Parent
	// or the leaf, all or nothing, and moves the leaf to the last.
	Append(drafts ...Draft) ([]*Entry, error)
	// AppendWith is Append with the first parent chosen by parent against
	// the session as it is when the write commits (see Store.AppendWith).
	AppendWith(parent func(t *Tree, last *Entry) (string, error), drafts ...Draft) ([]*Entry, error)
	// Update replaces the session with the File change returns (nil: no
	// change), with its sidecar changes, all or nothing.
	Update(change func(tx *Tx) (*File, error)) error
}

var _ Backend = (*Store)(nil)

// Leaser is a Backend shared by several hosts, where one host at a time
// may compact or prune a session. A session file needs none: its lock and
// the compaction's commit rules settle concurrent writers.
type Leaser interface {
	// HoldLease takes the session's lease for this host, catches up with
	// what other hosts wrote, and keeps the lease renewed until release
	// is called; while it is held, the Backend's writes commit only if
	// the lease still is. ErrLeaseHeld when another host holds it.
	HoldLease(ctx context.Context) (release func(), err error)
}

// Errors of shared backends that callers branch on.
var (
	// ErrConflict: the session's last entry is no longer the one the
	// writer saw; nothing was written. Read it again and retry.
	ErrConflict = errors.New("the session changed since it was read; read it again and retry")
	// ErrLeaseHeld: another holder has the session's lease and it has not
	// expired.
	ErrLeaseHeld = errors.New("another host holds the session's lease")
)

// Sidecars are the companions of a session (the prune archive) as an
// Update of a Backend other than a file sees them: reads are of the
// stored state, and writes take effect only with the session's change.
type Sidecars interface {
	Read(suffix string) ([]byte, error)
	Truncate(suffix string, size int64) error
	Append(suffix string, data []byte) error
}

// NewTx is the Tx a Backend's Update hands to a change: the session as
// the backend read it and its sidecars.
func NewTx(file *File, tree *Tree, leaf *Entry, path string, sidecars Sidecars) *Tx {
	return &Tx{file: file, tree: tree, leaf: leaf, path: path, side: sidecars}
}
