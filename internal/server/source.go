package server

import (
	"context"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
)

// A source is where the daemon's sessions live: the files under
// sessions.root (filesSource, the default) or a shared store
// (sessions.store). The registry deals only in names, keys and open
// handles; everything that depends on where the bytes are — confinement
// to a directory, inode identity, a file replaced on disk, a database's
// connections — stays behind these two interfaces.
type source interface {
	// open opens the session named rel (a name CheckName accepted), or
	// with create makes it first (header with cwd) when it is missing.
	// Before it parses anything it calls seen with the session's key and
	// current size (-1: not known cheaply) when the session exists: seen
	// returns the session already open under that key, or an error (a
	// size limit) that open returns as it is. So a session is parsed once
	// however many names reach it.
	open(ctx context.Context, rel string, create bool, cwd string, seen func(key any, size int64) (*openSession, error)) (opened backing, shared *openSession, created bool, err error)
	// load reads the session named rel once, read-only, without opening
	// it for writing or registering it (the propose mode: its owner
	// writes it); one over maxBytes is refused before it is read.
	load(ctx context.Context, rel string, maxBytes int64) (*session.File, error)
	// publish tells the other hosts sharing the source about an event of
	// the session rel's engine, without blocking; a source no other host
	// shares does nothing.
	publish(rel string, ev engine.Event)
	// close releases what the source holds; open handles are closed by
	// their own backing first.
	close() error
}

// backing is one open session's storage, owned by one openSession.
type backing interface {
	// handle is what the engine works on.
	handle() session.Backend
	// key identifies the session: two names that reach one session (a
	// symlinked directory) have one key.
	key() any
	// size is the session's size in bytes now, -1 when not known cheaply.
	size() int64
	// path is the file's absolute path, for the file watch; "" when the
	// session is not a file here (nothing to watch).
	path() string
	// stale reports whether the session moved on behind the handle: it
	// was replaced by something the handle does not follow (a file
	// renamed over the name by pith prune or an editor), or others wrote
	// to it (pi or a pith command appending to a file, other hosts).
	stale() bool
	// reopen brings the handle up to date: opens the replacement (a new
	// handle: how.fresh), or reads into the same handle what others
	// wrote. how.rewritten says the session was rewritten, not only
	// appended to (a replaced file, a store's session another host
	// pruned): entries read before may have changed. accept may refuse
	// the result (another session now has the name). done, nil when
	// nothing changed, runs once the caller brought the engine up to
	// date (it closes a replaced handle).
	reopen(accept func(session.Backend) error) (done func(), how reopened, err error)
	// reaches reports whether the name rel leads, now, to this
	// session: a second name of it (a hard link, a symlinked directory)
	// can be removed or pointed elsewhere while the session stays open
	// by its first.
	reaches(rel string) bool
	// close closes the handle and what it holds (a directory handle).
	close() error
}

// reopened is what a backing's reopen found.
type reopened struct {
	// fresh: a new handle, from which the engine is built again.
	fresh bool
	// rewritten: the session was rewritten, not only appended to.
	rewritten bool
}
