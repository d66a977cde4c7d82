package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/workspace"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/store/served"
)

// watchBuffer is how many events a slow WatchEvents client may fall behind
// before its stream is ended; the engine must never wait for a client.
const watchBuffer = 1024

// errWatchOverrun ends a stream whose client fell behind.
var errWatchOverrun = errors.New("the event stream fell behind; watch again")

// errInvalid marks a caller's mistake (InvalidArgument).
var errInvalid = errors.New("invalid request")

// openSession is one session open in the daemon.
type openSession struct {
	// rel is the name the session was opened by, relative to
	// sessions.root; b is where its bytes are.
	id, rel string
	// holder is the caller that opened it, whose share of the open
	// sessions (slotSession) it takes until it is closed.
	holder string
	b      served.Backing
	disp   *dispatch.Dispatcher
	// lastUsed (unix nanoseconds) orders sessions for eviction.
	lastUsed atomic.Int64

	// op serializes every write to the session: the engine serializes its
	// own operations, but raw entries go to the store directly.
	op  chan struct{}
	eng atomic.Pointer[engine.Session]
	// closed is set by Server.Close under the op lock: an operation that
	// was waiting for the lock finds the file closed and stops there.
	closed atomic.Bool
	// gone is closed with closed: the session's event streams end then,
	// rather than stay open on an entry of the registry no event reaches
	// any more (a later open makes a new one).
	gone chan struct{}

	watchMu  sync.Mutex // guards the fields below
	watchers map[int]*watcher
	nextW    int
	unsub    func()
	// evicting is set, with no watcher registered, when the daemon
	// decides to close the session; no watcher is added after that.
	evicting bool

	// follow reads, and announces, other writers' appends while
	// WatchEvents clients watch (followOutside).
	follow follower

	// names are the names the session was opened by (rel first): a file
	// reached by two names (a symlinked directory, a hard link) is one
	// session, and a caller may use it when it may touch any name it was
	// opened by — it proved so when it opened it.
	namesMu sync.Mutex
	names   []string
}

// maxNames bounds the names one open session remembers; a further name
// is refused (close the session, or use a name it has).
const maxNames = 16

// addName records rel as a name of o.
func (o *openSession) addName(rel string) error {
	o.namesMu.Lock()
	defer o.namesMu.Unlock()
	if slices.Contains(o.names, rel) {
		return nil
	}
	if len(o.names) >= maxNames {
		return fmt.Errorf("%w: session %q is open under %d names already; open it by one of them", ErrLimit, rel, len(o.names))
	}
	o.names = append(o.names, rel)
	return nil
}

// reachableBy reports whether c may touch o by one of its names. A
// name other than o's own (the one it was opened by, which the file's
// handle follows) is checked again first: it must still lead to the
// session's file, else it is forgotten. Once proved, a hard link in
// another tenant's tree stayed a way in after the link was removed.
func (o *openSession) reachableBy(c caller) bool {
	o.namesMu.Lock()
	defer o.namesMu.Unlock()
	if c.may(o.names[0]) { // not ContainsFunc(c.may): a call's hot path
		return true
	}
	for i := 1; i < len(o.names); {
		if !c.may(o.names[i]) {
			i++
			continue
		}
		if o.b.Reaches(o.names[i]) {
			return true
		}
		o.names = slices.Delete(o.names, i, i+1)
	}
	return false
}

// nameList is a copy of o's names, those other than its own checked
// again (see reachableBy).
func (o *openSession) nameList() []string {
	o.namesMu.Lock()
	defer o.namesMu.Unlock()
	own := o.names[0]
	o.names = slices.DeleteFunc(o.names, func(n string) bool { return n != own && !o.b.Reaches(n) })
	return slices.Clone(o.names)
}

type watcher struct {
	// ch holds pointers, one event shared by every watcher: a buffer of
	// watchBuffer events by value would cost each stream about 190 KB
	// before any event arrives.
	ch      chan *engine.Event
	overrun chan struct{}
	// local watchers (a Compact call's progress) get this host's engine
	// events only, not those other hosts published.
	local bool
	once  sync.Once
}

func (o *openSession) engine() *engine.Session { return o.eng.Load() }

func (o *openSession) st() session.Backend { return o.b.Handle() }

func (o *openSession) touch() { o.lastUsed.Store(time.Now().UnixNano()) }

// markEvicting decides the eviction of an unwatched session: it reports
// false, changing nothing, when someone watches.
func (o *openSession) markEvicting() bool {
	o.watchMu.Lock()
	defer o.watchMu.Unlock()
	if len(o.watchers) > 0 {
		return false
	}
	o.evicting = true
	return true
}

// closeFiles closes the session for good: the engine stops talking to
// watchers and its storage is released. Callers hold the op lock, or the
// deadline to wait for it has passed. A second call does nothing.
func (o *openSession) closeFiles() error {
	if !o.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(o.gone)
	o.unsubscribe()
	return o.b.Close()
}

// stale reports whether the session moved on behind its handle.
func (o *openSession) stale() bool { return o.b.Stale() }

// reopenIfReplaced opens the session again when another program replaced
// it since (pith prune, migrate, an editor), and rebuilds the engine from
// it; or reads what others appended — pi or a pith command to a file,
// other hosts to a shared store's session — and brings the engine's live
// context up to date (keeping what the engine remembers between calls).
// Call with the op lock held.
//
// Entries it reads that others appended are announced to the session's
// watchers (entries_appended), as the daemon's own appends are, and a
// session read again whole as session_rewritten: whether a call or the
// file watch (followOutside) found them first.
func (o *openSession) reopenIfReplaced(ctx context.Context, s *Server) error {
	before := len(o.st().Tree().Entries)
	done, how, err := o.b.Reopen(func(st session.Backend) error {
		if st.File().Header.ID != o.id {
			return fmt.Errorf("%w: %q (its file now holds another session; open it again)", ErrNoSession, o.id)
		}
		return nil
	})
	if err != nil || done == nil {
		return err
	}
	defer done()
	if how.Fresh {
		o.newEngine(s)
	} else if err := o.engine().Resync(ctx); err != nil {
		return err
	}
	switch {
	case how.Rewritten:
		o.announce(EventSessionRewritten, o.st().Leaf())
	case len(o.st().Tree().Entries) > before:
		o.announce(EventEntriesAppended, o.st().Leaf())
	}
	return nil
}

// EventEntriesAppended is the daemon's event for entries added to a
// session (not one of the engine's): by a call of this daemon (Append,
// AfterTurn, ReportError), or by another writer — pi or a pith command
// appending to the file, another host to a shared store's session — once
// the daemon has read them. EntryID is the session's leaf after them.
const EventEntriesAppended engine.EventKind = "entries_appended"

// EventSessionRewritten is the daemon's event for a session another
// program rewrote rather than appended to — a file replaced on disk
// (pith prune or its --restore, pith migrate --in-place, an editor), a
// shared store's session another host pruned — once the daemon has read
// it again: entries a client read before may have changed or gone, so
// it reads the session again. EntryID is the session's leaf after it.
const EventSessionRewritten engine.EventKind = "session_rewritten"

// announce tells the session's watchers of kind (entries appended, the
// session rewritten) up to leaf. Call with the op lock held.
func (o *openSession) announce(kind engine.EventKind, leaf *session.Entry) {
	if leaf == nil || !o.watched() {
		return // no event built for nobody: an append is a hot path
	}
	o.broadcast(engine.Event{Kind: kind, Time: time.Now(), EntryID: leaf.ID}, false)
}

func (o *openSession) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case o.op <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if o.closed.Load() {
		<-o.op
		return errEvicted
	}
	return nil
}

func (o *openSession) release() { <-o.op }

// newEngine (re)builds the engine from the store's current leaf, with the
// configuration in force. Callers hold the op lock, or own o exclusively.
func (o *openSession) newEngine(s *Server) {
	eng := engine.New(o.st(), engine.Options{
		Settings:   s.opts.Settings(s.cfg.Load()),
		Summarizer: s.summ,
		Hooks:      o.disp,
		Workspaces: s.workspacesOf(o.rel),
		Logger:     s.log.Named("engine").With("session", o.id),
	})
	unsub := eng.Subscribe(func(ev engine.Event) {
		s.metrics.observeEvent(ev)
		s.lastRuns.record(o, ev)
		s.refreshViewer(o.rel)
		o.broadcast(ev, false)
		s.publish(o.rel, ev)
	})
	o.watchMu.Lock()
	old := o.unsub
	o.unsub = unsub
	o.watchMu.Unlock()
	o.eng.Store(eng)
	if old != nil {
		old()
	}
}

func (o *openSession) unsubscribe() {
	o.watchMu.Lock()
	u := o.unsub
	o.unsub = nil
	o.watchMu.Unlock()
	if u != nil {
		u()
	}
}

// broadcast hands ev to every watcher without blocking; a watcher whose
// buffer is full is told to end its stream. remote marks an event another
// host's engine published.
func (o *openSession) broadcast(ev engine.Event, remote bool) {
	o.watchMu.Lock()
	defer o.watchMu.Unlock()
	shared := &ev // read-only from here on
	for _, w := range o.watchers {
		if remote && w.local {
			continue
		}
		select {
		case w.ch <- shared:
		default:
			w.once.Do(func() { close(w.overrun) })
		}
	}
}

// fellBehind ends the streams of o's watchers of other hosts' events as
// streams that fell behind (errWatchOverrun), after the events they have
// queued: another host lost events of the session before they reached
// the store, and what came before the loss still counts.
func (o *openSession) fellBehind() { o.endRemoteWatchers(&engine.Event{Kind: eventsLost}) }

// endRemoteWatchers ends the streams of o's watchers of other hosts'
// events with end, after the events they have queued; one whose queue is
// full ends as a stream that fell behind. A Compact's progress watcher
// (local) is left alone.
func (o *openSession) endRemoteWatchers(end *engine.Event) {
	o.watchMu.Lock()
	defer o.watchMu.Unlock()
	for _, w := range o.watchers {
		if w.local {
			continue
		}
		select {
		case w.ch <- end:
		default:
			w.once.Do(func() { close(w.overrun) })
		}
	}
}

// watched reports whether anyone watches o's events.
func (o *openSession) watched() bool {
	o.watchMu.Lock()
	defer o.watchMu.Unlock()
	return len(o.watchers) > 0
}

// watch registers a watcher; cancel removes it. It returns nil when the
// session is being closed by the daemon (look it up again).
func (o *openSession) watch(local bool) (*watcher, func()) {
	w := &watcher{ch: make(chan *engine.Event, watchBuffer), overrun: make(chan struct{}), local: local}
	o.watchMu.Lock()
	if o.evicting {
		o.watchMu.Unlock()
		return nil, nil
	}
	id := o.nextW
	o.nextW++
	o.watchers[id] = w
	o.watchMu.Unlock()
	return w, func() {
		o.watchMu.Lock()
		delete(o.watchers, id)
		o.watchMu.Unlock()
	}
}

// appendEntries appends raw entry objects, in order, in one write through
// the engine, so the live context and the engine's guards stay current —
// and a call is all or nothing: written in runs (a write for the messages,
// one for the other entries, and so on) a call cancelled or failed between
// two runs left its first runs in the file while its client got an error.
// Every entry is checked before anything is written. Call with the op lock
// held.
func (o *openSession) appendEntries(ctx context.Context, raws []json.RawMessage) ([]*session.Entry, error) {
	drafts := make([]session.Draft, len(raws))
	for i, raw := range raws {
		ce, err := session.ParseClientEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		if ce.Type == session.TypeMessage {
			if drafts[i], err = session.MessageDraft(ce.Message); err != nil {
				return nil, fmt.Errorf("entry %d: %w", i+1, err)
			}
			continue
		}
		drafts[i] = session.Draft{Type: ce.Type, Fields: ce.Fields}
	}
	return o.engine().AppendEntries(ctx, drafts...)
}

// leafSettings is the model and thinking level in force at the leaf (docs/behaviour.md
// §2), from the tree's incremental cache: constant time per GetContext
// however long the session is.
func leafSettings(store session.Backend) (provider, model, thinking string) {
	st := store.Tree().Settings(store.Leaf())
	return st.Provider, st.Model, st.ThinkingLevel
}

// workspacesOf opens the workspaces of the session named name for its
// engine, confined as configured at each open (server.workspaceRoot, a
// tenant's part of it: config.Server.WorkspaceRootFor): the cwd is a
// client's choice, so without a root no workspace file is read. Every
// read is held to the deny list configured then (workspace.deny).
func (s *Server) workspacesOf(name string) workspace.Opener {
	return func(cwd string, opts workspace.Options) (*workspace.Workspace, error) {
		cfg := s.cfg.Load()
		deny, err := cfg.Workspace.DenyList()
		if err != nil {
			return nil, err
		}
		return workspace.Within(cfg.Server.WorkspaceRootFor(name)).Denying(deny)(cwd, opts)
	}
}
