// Package served is where the sessions a daemon serves live, as the
// daemon's registry sees them: the files under sessions.root (Files) or a
// shared store.Store (Stored). The registry deals only in names, keys and
// open handles; everything that depends on where the bytes are —
// confinement to a directory, real directories with tenants, inode
// identity, a file replaced or appended to on disk, another host's
// rewrite — stays behind Source and Backing.
package served

import (
	"context"
	"errors"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
)

// The refusals of a source. The daemon re-exports them (its gRPC codes
// map them), so their wording is the daemon's.
var (
	// ErrInvalidPath: a name outside the grammar, or a file where a
	// directory should be (InvalidArgument).
	ErrInvalidPath = store.ErrInvalidName
	// ErrOutsideRoot: a name that leads outside sessions.root, or through
	// a link with tenants (PermissionDenied).
	ErrOutsideRoot = errors.New("session path leads outside sessions.root")
	// ErrLimit marks a refusal by one of the daemon's limits
	// (ResourceExhausted): a size, or the number of open sessions.
	ErrLimit = errors.New("limit reached")
	// ErrShuttingDown refuses calls once the daemon's Close has begun.
	ErrShuttingDown = errors.New("the server is shutting down")
)

// A Source is where the daemon's sessions live.
type Source interface {
	// Open opens the session named rel (a name store.CheckName
	// accepted), or with create makes it first (header with cwd) when it
	// is missing. Before it parses anything it calls seen with the
	// session's key and current size (-1: not known cheaply) when the
	// session exists: seen reports whether the caller has that session
	// open already (Open then returns a nil Backing), or an error (a size
	// limit) that Open returns as it is. So a session is parsed once
	// however many names reach it.
	Open(ctx context.Context, rel string, create bool, cwd string, seen func(key any, size int64) (known bool, err error)) (opened Backing, created bool, err error)
	// Load reads the session named rel once, read-only, without opening
	// it for writing (the propose mode: its owner writes it); one over
	// maxBytes is refused before it is read.
	Load(ctx context.Context, rel string, maxBytes int64) (*session.File, error)
	// List names the sessions that may accepts, at most max of them, in
	// the name grammar (a file's prune archive is no session).
	List(ctx context.Context, may func(name string) bool, max int) ([]string, error)
	// Close releases what the source holds; open handles are closed by
	// their own Backing first.
	Close() error
}

// Backing is one open session's storage, owned by one open session of
// the daemon.
type Backing interface {
	// Handle is what the engine works on.
	Handle() session.Backend
	// Key identifies the session: two names that reach one session (a
	// symlinked directory) have one key.
	Key() any
	// Size is the session's size in bytes now, -1 when not known cheaply.
	Size() int64
	// Follow calls poke when the session may have changed behind the
	// handle, until stop: a file at every change the files' watch sees.
	// A session whose changes are told another way (a shared store's
	// watch: StoredOptions.Changed) is never poked by it.
	Follow(poke func()) (stop func(), err error)
	// Stale reports whether the session moved on behind the handle: it
	// was replaced by something the handle does not follow (a file
	// renamed over the name by pith prune or an editor), or others wrote
	// to it (pi or a pith command appending to a file, other hosts).
	Stale() bool
	// Reopen brings the handle up to date: opens the replacement (a new
	// handle: how.Fresh), or reads into the same handle what others
	// wrote. how.Rewritten says the session was rewritten, not only
	// appended to (a replaced file, a store's session another host
	// pruned): entries read before may have changed. accept may refuse
	// the result (another session now has the name). done, nil when
	// nothing changed, runs once the caller brought the engine up to
	// date (it closes a replaced handle).
	Reopen(accept func(session.Backend) error) (done func(), how Reopened, err error)
	// Reaches reports whether the name rel leads, now, to this
	// session: a second name of it (a hard link, a symlinked directory)
	// can be removed or pointed elsewhere while the session stays open
	// by its first.
	Reaches(rel string) bool
	// Close closes the handle and what it holds (a directory handle).
	Close() error
}

// Reopened is what a Backing's Reopen found.
type Reopened struct {
	// Fresh: a new handle, from which the engine is built again.
	Fresh bool
	// Rewritten: the session was rewritten, not only appended to.
	Rewritten bool
}
