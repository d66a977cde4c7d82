package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/pith-dev/pith/core/engine"
)

// Following other writers: while a session has WatchEvents clients, its
// file is followed through the files' one watch (store/served; the viewer's
// pages share it), and what pi or a pith command appends is read as soon
// as it lands and announced to them (entries_appended), as is a file
// another program replaced (session_rewritten) — before, they learnt of
// it only when some call of theirs read the session. A shared store's
// session is followed the same way, woken by the store's watch of every
// host's changes (storeChanged). Own writes wake the follower too; it
// finds nothing new and stops there. A configuration applied wakes it as
// well: a lowered server.maxSessionBytes may refuse the session now.
//
// A session refused by server.maxSessionBytes — grown past it by another
// writer, or the bound lowered below it — ends its streams with the
// refusal (ResourceExhausted), after the events queued before it: they
// would otherwise wait for events that cannot come while every call is
// refused. A watch begun then is refused the same way.

// follower is an open session's following of other writers.
type follower struct {
	mu sync.Mutex
	// n counts the streams that asked for it; stop ends it.
	n    int
	stop func()
	// kick wakes the catch-up loop; one pending kick covers a burst.
	kick chan struct{}
}

// poke asks for a catch-up without blocking.
func (f *follower) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// followOutside follows o's other writers until stop is called, as long
// as any stream asked for it.
func (s *Server) followOutside(o *openSession) (stop func()) {
	f := &o.follow
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n++; f.n == 1 {
		f.stop = s.startFollowing(o)
	} else {
		// A catch-up running now may have found the session refused
		// before this stream was there to be told: one more look.
		f.poke()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.n--; f.n == 0 {
				f.stop()
				f.stop = nil
			}
		})
	}
}

// startFollowing starts the watch of o's file and the catch-up loop it
// pokes. A session that is no file here (a shared store's) has no file
// to watch: the store's own watch, which reports every host's changes,
// pokes it (storeChanged).
func (s *Server) startFollowing(o *openSession) (stop func()) {
	f := &o.follow
	unwatch, err := o.b.Follow(f.poke)
	if err != nil {
		// The calls still catch up; only the announcement waits.
		s.log.Warn("cannot watch a session file for other writers; its watchers hear of their appends at the next call", "session", o.id, "error", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	// What was appended before the watch began is read (and announced)
	// at once too, not at the next change.
	f.poke()
	go func() {
		for {
			applied := *s.applied.Load()
			select {
			case <-ctx.Done():
				return
			case <-o.gone:
				return
			case <-s.shutdown:
				return
			case <-f.kick:
			case <-applied:
			}
			s.catchUp(ctx, o)
		}
	}()
	return func() {
		unwatch()
		cancel()
	}
}

// catchUp reads what other writers appended to o, which announces it
// (reopenIfReplaced), through the session's operation lock as a call
// would: it waits for a running operation, which may already have read
// it.
func (s *Server) catchUp(ctx context.Context, o *openSession) {
	if s.admit(o) != nil || !o.stale() {
		return // refused (its streams are told), or nothing new
	}
	if err := o.acquire(ctx); err != nil {
		return // stopped following, or the session was closed
	}
	defer o.release()
	if err := s.bringUpToDate(ctx, o); err != nil && !overBound(err) {
		s.log.Debug("following another writer of a session", "session", o.id, "error", err)
	}
}

// bringUpToDate is reopenIfReplaced for a call or the follower: a
// refusal by the size bound — the source refused to read what another
// writer appended past it — ends o's streams too. Call with the op lock
// held.
func (s *Server) bringUpToDate(ctx context.Context, o *openSession) error {
	err := o.reopenIfReplaced(ctx, s)
	if overBound(err) {
		s.endStreams(o, err)
	}
	return err
}

// overBound reports whether err is a refusal by server.maxSessionBytes of
// what a session would take in (served.OverBound, for files and stored
// sessions alike). ErrLimit's other refusals (the number of open
// sessions, of names) come from an open, never from a catch-up.
func overBound(err error) bool { return errors.Is(err, ErrLimit) }

// sessionRefused is the kind of the marker that ends a session's streams
// with the refusal in its Error (refusedStream); it is never sent to a
// client as an event.
const sessionRefused engine.EventKind = "pith.session_refused"

// endStreams ends the WatchEvents streams of o with err, a refusal by the
// size bound, after the events they have queued. A Compact's progress
// watcher (local) is left alone: its call holds the op lock, and ends
// with its own answer.
func (s *Server) endStreams(o *openSession, err error) {
	if !o.watched() {
		return
	}
	s.log.Warn("a session is over server.maxSessionBytes; its calls and streams are refused until it shrinks or the bound is raised", "session", o.id, "error", err)
	o.endRemoteWatchers(&engine.Event{Kind: sessionRefused, Time: time.Now(), Error: refusalMessage(err)})
}

// pokeFollowed wakes the catch-up of the session open under key, or of
// every open session when key is nil, if it is followed; a session
// nobody follows is caught up by its next call.
func (s *Server) pokeFollowed(key any) {
	s.mu.Lock()
	var opened []*openSession
	if key != nil {
		if o := s.keyed[key]; o != nil {
			opened = append(opened, o)
		}
	} else {
		for _, o := range s.keyed {
			opened = append(opened, o)
		}
	}
	s.mu.Unlock()
	for _, o := range opened {
		f := &o.follow
		f.mu.Lock()
		if f.n > 0 {
			f.poke()
		}
		f.mu.Unlock()
	}
}
