package session

import (
	"context"
	"errors"
	"fmt"
)

// Backend is an open session the engine works on: its parsed entries, the
// leaf this process is on, and the writes the engine makes. A session
// file (files.Session, package store/files) is one; a session in a shared
// store (store.OpenSession) is another. Compaction, pruning and tree
// navigation take a Backend, so every backend gets the same rules.
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
	// the session as it is when the write commits (see files.Session.AppendWith).
	AppendWith(parent func(t *Tree, last *Entry) (string, error), drafts ...Draft) ([]*Entry, error)
	// Update replaces the session with the File change returns (nil: no
	// change), with its sidecar changes, all or nothing.
	Update(change func(tx *Tx) (*File, error)) error
}

// Leaser is a Backend shared by several hosts, where one host at a time
// may compact or prune a session. A session file needs none: its lock and
// the compaction's commit rules settle concurrent writers.
type Leaser interface {
	// HoldLease takes the session's lease for this host, catches up with
	// what other hosts wrote, and keeps the lease renewed until release
	// is called; while it is held, the Backend's writes commit only if
	// the lease still is. ErrLeaseHeld when another host holds it. held
	// is ctx, cancelled with the cause ErrLeaseLost once the lease is
	// known to be lost (taken over, or expired unrenewed): work done
	// under it stops rather than finish for nothing.
	HoldLease(ctx context.Context) (held context.Context, release func(), err error)
}

// Errors of shared backends that callers branch on.
var (
	// ErrConflict: the session's last entry is no longer the one the
	// writer saw; nothing was written. Read it again and retry.
	ErrConflict = errors.New("the session changed since it was read; read it again and retry")
	// ErrLeaseHeld: another holder has the session's lease and it has not
	// expired.
	ErrLeaseHeld = errors.New("another host holds the session's lease")
	// ErrLeaseLost: the lease expired or was taken over; nothing was
	// written.
	ErrLeaseLost = errors.New("the session's lease was lost")
)

// Sidecars are the companions of a session (the prune archive) as an
// Update of a Backend other than a file sees them: reads are of the
// stored state, and writes take effect only with the session's change.
type Sidecars interface {
	Read(suffix string) ([]byte, error)
	Truncate(suffix string, size int64) error
	Append(suffix string, data []byte) error
}

// Errors of every Backend's writes.
var (
	// ErrUnchanged is wrapped by every error of a write after which the
	// session file is verified to be exactly as it was before.
	ErrUnchanged = errors.New("the session is unchanged")
	// ErrIncomplete is wrapped by errors of a write that failed after it
	// changed the file: cutting back a failed append failed too, or a rewrite
	// was renamed into place but a later step failed. The message says what
	// state the file is in.
	ErrIncomplete = errors.New("the write did not complete")
	// ErrReadOnly refuses to change a session that cannot be written (opened
	// read-only, or without an owner write bit).
	ErrReadOnly = errors.New("the session file is read-only")
	// ErrOldVersion refuses appends to a v1 or v2 file, which is read through
	// an in-memory migration.
	ErrOldVersion = errors.New("the session file is in an old format (version 1 or 2)")
)

// LeafAt is the entry a SetLeaf to id moves the leaf to in t: nil for ""
// (before the first entry), an error naming the session name when t has
// no such entry. Every Backend's SetLeaf resolves its target here.
func LeafAt(t *Tree, name, id string) (*Entry, error) {
	if id == "" {
		return nil, nil
	}
	e := t.Get(id)
	if e == nil {
		return nil, fmt.Errorf("%s: no entry with id %q", name, id)
	}
	return e, nil
}
