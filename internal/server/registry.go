package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/store/served"
)

// The registry of open sessions: how a name becomes an open session
// (through the source: confined to sessions.root for the files), how
// sessions are shared, bounded in number, closed when idle, and reopened
// when they changed behind their handle or were closed behind a client's
// back.

// ErrLimit marks a refusal by one of the daemon's limits
// (ResourceExhausted): a size, or the number of open sessions. The
// session source refuses sizes with it too.
var ErrLimit = served.ErrLimit

// errEvicted is what acquire returns for a session closed meanwhile for
// idleness or the count limit; the caller looks it up again.
var errEvicted = errors.New("the session was closed meanwhile")

// Open opens the session at rel (relative to sessions.root, in the name
// grammar of checkName) from the source, creating it with cwd when create
// is set. A session already open is shared.
func (s *Server) Open(ctx context.Context, rel string, create bool, cwd string) (*openSession, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if err := checkName(rel); err != nil {
		return nil, false, err
	}
	if err := authorize(ctx, rel); err != nil {
		return nil, false, err
	}
	limits := s.cfg.Load().Server
	if create {
		// The cwd goes into the header of a file created here: the
		// limits of an append hold for it, before anything is written.
		if err := checkBytes(limits, len(cwd), 0, 1); err != nil {
			return nil, false, err
		}
	}
	// seen refuses a session over the size bound before it is parsed —
	// one open already under another name of it too, as its calls are
	// (admit) — and shares one open under another name.
	var shared *openSession
	seen := func(key any, size int64) (bool, error) {
		if err := served.OverBound(fmt.Sprintf("session %q is", rel), size, int64(limits.MaxSessionBytes)); err != nil {
			return false, err
		}
		if o := s.byKey(key); o != nil {
			shared = o
			return true, o.addName(rel)
		}
		return false, nil
	}
	b, created, err := s.src.Open(ctx, rel, create, cwd, seen)
	if err != nil {
		return nil, false, err
	}
	if shared != nil {
		return shared, false, nil
	}
	keep := false
	defer func() {
		if !keep {
			b.Close()
		}
	}()
	// A store may tell the size only once the session is read.
	if err := served.OverBound(fmt.Sprintf("session %q is", rel), b.Size(), int64(limits.MaxSessionBytes)); err != nil {
		return nil, false, err
	}
	store := b.Handle()
	if store.File().Migrated {
		return nil, false, fmt.Errorf("%s: %w; run `pith migrate --in-place` on it first", rel, session.ErrOldVersion)
	}
	key := b.Key()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, ErrShuttingDown
	}
	if o, ok := s.keyed[key]; ok {
		// Opened by a concurrent call meanwhile: share that one. This
		// call still made the session when created says so (the other
		// opened what it made); its caller is the one told.
		if err := o.addName(rel); err != nil {
			return nil, false, err
		}
		o.touch()
		return o, created, nil
	}
	id := store.File().Header.ID
	if _, ok := s.sessions[id]; ok {
		// The other path is not named: it may be another tenant's.
		return nil, false, fmt.Errorf("%w: session %s is already open under another path", errConflict, id)
	}
	// The caller's share first: past it, its own idle sessions make room,
	// never another caller's.
	holder := callerOf(ctx).name
	slot := slotKey{holder, slotSession}
	for {
		err := s.takeSlot(slot)
		if err == nil {
			break
		}
		if !s.evictLRULocked(func(o *openSession) bool { return o.holder == holder }) {
			return nil, false, err
		}
	}
	defer func() {
		if !keep {
			s.giveSlot(slot)
		}
	}()
	if len(s.sessions) >= limits.MaxOpenSessions && !s.evictLRULocked(nil) {
		return nil, false, fmt.Errorf("%w: %d sessions are open and busy (server.maxOpenSessions); close one or try again", ErrLimit, len(s.sessions))
	}
	o := &openSession{id: id, rel: rel, holder: holder, b: b, op: make(chan struct{}, 1), gone: make(chan struct{}), watchers: map[int]*watcher{}, names: []string{rel}}
	o.follow.kick = make(chan struct{}, 1)
	o.disp, err = dispatch.NewDispatcher(dispatch.Options{
		Logger: s.log.Named("hooks"),
		Host:   s.hostAPI,
		Observe: func(ob hooks.Observation) {
			s.metrics.observeHook(ob)
			o.engine().ObserveHook(ob)
		},
	}, s.pluginSet...)
	if err != nil {
		return nil, false, err
	}
	o.newEngine(s)
	o.touch()
	s.sessions[id] = o
	s.keyed[key] = o
	delete(s.evicted, id)
	s.metrics.openSessions.Inc()
	keep = true
	return o, created, nil
}

var errConflict = errors.New("conflict")

func (s *Server) byKey(k any) *openSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.keyed[k]
	if o != nil {
		o.touch()
	}
	return o
}

// deliver hands an engine event another host published to the watchers
// of the session open here under key; none open, nobody here watches it.
func (s *Server) deliver(key any, ev engine.Event) {
	s.mu.Lock()
	o := s.keyed[key]
	s.mu.Unlock()
	if o == nil {
		return
	}
	if ev.Kind == eventsLost {
		o.fellBehind()
		return
	}
	o.broadcast(ev, true)
}

// lookupStore is the HostAPI's view of the open sessions.
func (s *Server) lookupStore(id string) (session.Backend, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.sessions[id]
	if !ok {
		return nil, false
	}
	return o.st(), true
}

// get finds the session id for the caller of ctx, refusing one outside
// the caller's prefix. A session closed for idleness or the count limit is
// reopened.
func (s *Server) get(ctx context.Context, id string) (*openSession, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrShuttingDown
	}
	o, ok := s.sessions[id]
	names, wasOpen := s.evicted[id]
	s.mu.Unlock()
	if !ok {
		if !wasOpen {
			return nil, fmt.Errorf("%w: %q", ErrNoSession, id)
		}
		i := slices.IndexFunc(names, callerOf(ctx).may)
		if i < 0 {
			return nil, fmt.Errorf("%w: session %q", ErrForbidden, id)
		}
		var err error
		if o, _, err = s.Open(ctx, names[i], false, ""); err != nil {
			return nil, err
		}
		if o.id != id {
			return nil, fmt.Errorf("%w: %q (its file now holds another session)", ErrNoSession, id)
		}
		// The callers of its other names keep their way in, by the
		// names that still lead to its file.
		for _, n := range names {
			if n == names[i] || o.b.Reaches(n) {
				_ = o.addName(n)
			}
		}
	}
	if c := callerOf(ctx); !o.reachableBy(c) {
		return nil, fmt.Errorf("%w: session %q", ErrForbidden, id)
	}
	if err := s.admit(o); err != nil {
		return nil, err
	}
	o.touch()
	return o, nil
}

// sessionBound is server.maxSessionBytes in force.
func (s *Server) sessionBound() int64 { return int64(s.cfg.Load().Server.MaxSessionBytes) }

// admit holds a session open here to server.maxSessionBytes in force at
// every call, as an open of it is: a reload may have lowered the bound
// below its size, or another writer grown its file past it (nothing of
// which is read then). The calls are refused until the file shrinks (a
// prune renamed a smaller one over it) or the bound is raised; its
// streams end with the refusal.
func (s *Server) admit(o *openSession) error {
	err := served.OverBound("the session is", o.b.Size(), s.sessionBound())
	if err != nil {
		s.endStreams(o, err)
	}
	return err
}

// acquire is get plus the session's operation lock, with the file
// reopened when it was replaced on disk. Release with o.release().
func (s *Server) acquire(ctx context.Context, id string) (*openSession, error) {
	for range 3 {
		o, err := s.get(ctx, id)
		if err != nil {
			return nil, err
		}
		err = o.acquire(ctx)
		if errors.Is(err, errEvicted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := s.bringUpToDate(ctx, o); err != nil {
			o.release()
			return nil, err
		}
		return o, nil
	}
	return nil, fmt.Errorf("%w: session %q keeps being closed; raise server.maxOpenSessions", ErrLimit, id)
}

// getFresh is get for a call that only reads: it takes the operation
// lock only when the session moved on behind its handle, to bring it up
// to date.
func (s *Server) getFresh(ctx context.Context, id string) (*openSession, error) {
	o, err := s.get(ctx, id)
	if err != nil || !o.stale() {
		return o, err
	}
	o, err = s.acquire(ctx, id)
	if err != nil {
		return nil, err
	}
	o.release()
	return o, nil
}

// watch subscribes to the events of session id. A session being watched
// is never closed for idleness or the limit; one closed between the lookup
// and the subscription is looked up (reopened) again.
func (s *Server) watch(ctx context.Context, id string) (*openSession, *watcher, func(), error) {
	for range 3 {
		o, err := s.get(ctx, id)
		if err != nil {
			return nil, nil, nil, err
		}
		if w, cancel := o.watch(false); w != nil {
			// Its client hears of other writers' appends as they land.
			stop := s.followOutside(o)
			return o, w, func() { stop(); cancel() }, nil
		}
	}
	return nil, nil, nil, fmt.Errorf("%w: session %q keeps being closed; raise server.maxOpenSessions", ErrLimit, id)
}

// CloseSession closes the session id for the caller of ctx, waiting for
// its running operation. Closing a session that is not open is not an
// error.
func (s *Server) CloseSession(ctx context.Context, id string) error {
	s.mu.Lock()
	o, ok := s.sessions[id]
	names, wasOpen := s.evicted[id]
	s.mu.Unlock()
	if !ok {
		if wasOpen && !slices.ContainsFunc(names, callerOf(ctx).may) {
			return fmt.Errorf("%w: session %q", ErrForbidden, id)
		}
		if wasOpen {
			s.mu.Lock()
			delete(s.evicted, id)
			s.mu.Unlock()
			return nil
		}
		return fmt.Errorf("%w: %q", ErrNoSession, id)
	}
	if !o.reachableBy(callerOf(ctx)) {
		return fmt.Errorf("%w: session %q", ErrForbidden, id)
	}
	if err := o.acquire(ctx); err != nil {
		if errors.Is(err, errEvicted) {
			return nil
		}
		return err
	}
	s.mu.Lock()
	s.dropLocked(o, false)
	s.mu.Unlock()
	err := o.closeFiles()
	o.release()
	return err
}

// dropLocked takes o out of the registry; remember keeps its path for a
// transparent reopen. Callers hold s.mu and o's operation lock.
func (s *Server) dropLocked(o *openSession, remember bool) {
	if s.sessions[o.id] != o {
		return
	}
	delete(s.sessions, o.id)
	delete(s.keyed, o.b.Key())
	s.metrics.openSessions.Dec()
	s.giveSlot(slotKey{o.holder, slotSession})
	if !remember {
		return
	}
	// Bounded: past the bound an arbitrary old entry goes, and a call
	// naming it gets NotFound (open it again by path).
	if limit := max(16*s.cfg.Load().Server.MaxOpenSessions, 4096); len(s.evicted) >= limit {
		for k := range s.evicted {
			delete(s.evicted, k)
			if len(s.evicted) < limit {
				break
			}
		}
	}
	s.evicted[o.id] = o.nameList()
}

// evictLocked closes o when nothing uses it: no call holds it and nobody
// watches its events. Callers hold s.mu.
func (s *Server) evictLocked(o *openSession) bool {
	select {
	case o.op <- struct{}{}:
	default:
		return false
	}
	defer o.release()
	if !o.markEvicting() {
		return false
	}
	s.dropLocked(o, true)
	if err := o.closeFiles(); err != nil {
		s.log.Warn("closing an idle session", "session", o.id, "error", err)
	}
	return true
}

// evictLRULocked closes the least recently used idle session of those
// which (nil: all).
func (s *Server) evictLRULocked(which func(*openSession) bool) bool {
	var cands []*openSession
	for _, o := range s.sessions {
		if which == nil || which(o) {
			cands = append(cands, o)
		}
	}
	for len(cands) > 0 {
		oldest := 0
		for i, o := range cands {
			if o.lastUsed.Load() < cands[oldest].lastUsed.Load() {
				oldest = i
			}
		}
		if s.evictLocked(cands[oldest]) {
			return true
		}
		cands = append(cands[:oldest], cands[oldest+1:]...)
	}
	return false
}

// closeIdle closes sessions no call used for server.idleTimeout, until
// the server closes.
func (s *Server) closeIdle() {
	defer close(s.janitor)
	for {
		idle := s.cfg.Load().Server.IdleTimeout
		select {
		case <-s.shutdown:
			return
		case <-time.After(min(max(idle/4, time.Second), time.Minute)):
		}
		cutoff := time.Now().Add(-idle).UnixNano()
		s.mu.Lock()
		for _, o := range s.sessions {
			if o.lastUsed.Load() < cutoff {
				s.evictLocked(o)
			}
		}
		s.mu.Unlock()
	}
}

// checkGrowth refuses, before anything is written, a call that would add
// n bytes in items entries to o past a size limit.
func (s *Server) checkGrowth(o *openSession, n, items int) error {
	size := o.b.Size()
	if size < 0 {
		// The write itself reports a missing file.
		return checkBytes(s.cfg.Load().Server, n, -1, items)
	}
	return checkBytes(s.cfg.Load().Server, n, size, items)
}

// checkBytes is the one size check of every write a client asks for: n
// bytes in items entries (or a header) added in one call to a session of
// size bytes (0 for one being created; -1 unknown: the per-call limit
// only).
func checkBytes(lim config.Server, n int, size int64, items int) error {
	if n > lim.MaxAppendBytes {
		return fmt.Errorf("%w: %d bytes in one call, over server.maxAppendBytes (%d)", ErrLimit, n, lim.MaxAppendBytes)
	}
	if size < 0 {
		return nil
	}
	// Each entry gains its envelope (type, id, parentId, timestamp).
	const envelope = 128
	return served.OverBound("the session would grow to", size+int64(n)+int64(items*envelope), int64(lim.MaxSessionBytes))
}
