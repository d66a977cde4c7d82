package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
)

// storeSource serves the sessions of a shared store (sessions.store: a
// PostgreSQL database several hosts use). Names, tenant prefixes and
// tokens are those of the files; what differs:
//
//   - Another host may append at any time, so every call first reads what
//     the others appended (one small query) and rebuilds the engine when
//     something arrived: a call sees every write committed before it began,
//     through any host. A write still commits only against the last entry
//     read (else store.ErrConflict: Aborted, retry).
//   - Compaction and prune run under the session's lease in the store
//     (the engine takes it through session.Leaser); a host that dies loses
//     it after sessions.leaseTTL.
//   - Engine events are published through the store, and the events other
//     hosts published are delivered to this host's watchers (WatchEvents).
//   - After the store was unavailable, or when another host rewrote the
//     session (prune), the session is read whole again.
type storeSource struct {
	st     store.Store
	holder string
	ttl    time.Duration
	log    hclog.Logger
	// deliver hands an event another host published to the watchers of
	// the session open here under key, if any.
	deliver func(key any, ev engine.Event)
	// changed tells of every change any host made to a session (the
	// store event's kind), for the viewer.
	changed func(name, kind string)

	// outbox queues this host's engine events for publication, so a slow
	// or unreachable database never holds up an engine.
	outbox chan published
	stop   context.CancelFunc
	done   sync.WaitGroup

	mu     sync.Mutex
	byName map[string]*storeBacking // by name, for the store's events
	// reloadAll is set when the store was unavailable: the watch may have
	// missed rewrites meanwhile, so every session is read whole again.
	reloadAll atomic.Uint64
}

// published is one engine event on its way to the other hosts.
type published struct {
	name string
	ev   engine.Event
}

// outboxSize is how many events may wait for the database; past it they
// are dropped (and logged): the other hosts' watchers miss them, this
// host's still get them.
const outboxSize = 1024

func newStoreSource(st store.Store, ttl time.Duration, log hclog.Logger, deliver func(key any, ev engine.Event), changed func(name, kind string)) (*storeSource, error) {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	ctx, cancel := context.WithCancel(context.Background())
	s := &storeSource{
		st: st, ttl: ttl, log: log, deliver: deliver, changed: changed,
		holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:])),
		outbox: make(chan published, outboxSize),
		stop:   cancel,
		byName: map[string]*storeBacking{},
	}
	events, err := st.Watch(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch the session store: %w", err)
	}
	s.done.Add(2)
	go s.watch(events)
	go s.publishLoop(ctx)
	return s, nil
}

func storeKey(rel string) any { return "store:" + rel }

func (s *storeSource) open(ctx context.Context, rel string, create bool, cwd string, seen func(key any, size int64) (*openSession, error)) (backing, *openSession, bool, error) {
	if o, err := seen(storeKey(rel), -1); o != nil || err != nil {
		return nil, o, false, err
	}
	created := false
	opts := store.SessionOptions{Holder: s.holder, LeaseTTL: s.ttl, Logger: s.log.Named("store").With("session", rel)}
	h, err := store.OpenSession(ctx, s.st, rel, opts)
	if errors.Is(err, store.ErrNotFound) && create {
		err = s.st.Create(ctx, rel, session.Options{}.HeaderLine(cwd))
		created = err == nil
		if errors.Is(err, store.ErrExists) {
			err = nil // another host created it first
		}
		if err == nil {
			h, err = store.OpenSession(ctx, s.st, rel, opts)
		}
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("session %q: %w", rel, err)
	}
	b := &storeBacking{src: s, rel: rel, h: h}
	b.reloads.Store(s.reloadAll.Load())
	s.mu.Lock()
	s.byName[rel] = b
	s.mu.Unlock()
	return b, nil, created, nil
}

func (s *storeSource) load(ctx context.Context, rel string, maxBytes int64) (*session.File, error) {
	f, err := s.st.Load(ctx, rel)
	if err != nil {
		return nil, fmt.Errorf("session %q: %w", rel, err)
	}
	n := int64(len(f.Header.Raw) + 1)
	for _, e := range f.Entries {
		n += int64(len(e.Raw) + 1)
	}
	if maxBytes >= 0 && n > maxBytes {
		return nil, fmt.Errorf("%w: session %q is %d bytes, over server.maxSessionBytes (%d)", ErrLimit, rel, n, maxBytes)
	}
	return f, nil
}

// watch follows the store's events until the source closes.
func (s *storeSource) watch(events <-chan store.Event) {
	defer s.done.Done()
	for ev := range events {
		switch ev.Kind {
		case store.EventRewritten:
			s.mu.Lock()
			if b := s.byName[ev.Session]; b != nil {
				b.rewritten.Store(true)
			}
			s.mu.Unlock()
		case store.EventResync:
			// Announcements were lost while the watch was down (another
			// host's prune among them): every open session is read whole
			// before its next call.
			s.mu.Lock()
			for _, b := range s.byName {
				b.rewritten.Store(true)
			}
			s.mu.Unlock()
		case store.EventPublished:
			var w wireEvent
			if json.Unmarshal(ev.Payload, &w) != nil || w.Host == s.holder {
				continue // this host's own: its watchers had it already
			}
			s.deliver(storeKey(ev.Session), w.event())
		}
		// Told after the flags above are set: the follower it wakes
		// must see a rewrite as one (read whole, session_rewritten).
		if ev.Kind != store.EventPublished && s.changed != nil {
			s.changed(ev.Session, ev.Kind)
		}
	}
}

// publish queues an engine event of the session for the other hosts.
func (s *storeSource) publish(rel string, ev engine.Event) {
	select {
	case s.outbox <- published{rel, ev}:
	default:
		s.log.Warn("too many engine events waiting for the session store; one is not sent to the other hosts", "session", rel, "kind", ev.Kind)
	}
}

func (s *storeSource) publishLoop(ctx context.Context) {
	defer s.done.Done()
	send := func(ctx context.Context, p published) {
		payload, err := wireOf(s.holder, p.ev).encode()
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = s.st.Publish(pctx, p.name, payload)
			cancel()
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("an engine event did not reach the other hosts", "session", p.name, "kind", p.ev.Kind, "error", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			// The last events of the sessions just closed (a compaction
			// that ended at shutdown) still go out, briefly.
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			for {
				select {
				case p := <-s.outbox:
					send(dctx, p)
				default:
					return
				}
			}
		case p := <-s.outbox:
			send(ctx, p)
		}
	}
}

// unavailable notes that the store could not be reached: every session
// is read whole before its next call.
func (s *storeSource) unavailable() { s.reloadAll.Add(1) }

func (s *storeSource) forget(b *storeBacking) {
	s.mu.Lock()
	if s.byName[b.rel] == b {
		delete(s.byName, b.rel)
	}
	s.mu.Unlock()
}

func (s *storeSource) close() error {
	s.stop()
	s.done.Wait()
	return nil
}

// storeBacking is one session of the store open in the daemon.
type storeBacking struct {
	src *storeSource
	rel string
	h   *store.Session
	// rewritten: another host replaced the session (prune); reloads is
	// the source's unavailability count when it was last read whole.
	rewritten atomic.Bool
	reloads   atomic.Uint64

	// sized caches size: the File it was counted over, how many of its
	// entries, and their bytes. A catch-up only appends to the same File,
	// so each write adds up just the new entries; a whole read gives a new
	// File and a new count.
	sizeMu     sync.Mutex
	sizedFile  *session.File
	sizedCount int
	sizedBytes int64
}

func (b *storeBacking) handle() session.Backend { return b.h }

func (b *storeBacking) key() any { return storeKey(b.rel) }

// size adds up the lines read, with their newlines: the daemon checks it
// on every write, so only entries not counted before are added.
func (b *storeBacking) size() int64 {
	f := b.h.File()
	if f == nil {
		return -1
	}
	b.sizeMu.Lock()
	defer b.sizeMu.Unlock()
	if f != b.sizedFile || len(f.Entries) < b.sizedCount {
		b.sizedFile, b.sizedCount, b.sizedBytes = f, 0, int64(len(f.Header.Raw)+1)
	}
	for _, e := range f.Entries[b.sizedCount:] {
		b.sizedBytes += int64(len(e.Raw) + 1)
	}
	b.sizedCount = len(f.Entries)
	return b.sizedBytes
}

// replaced is always true: another host may have appended, and the next
// call must see it. reopen finds out cheaply whether anything changed.
func (b *storeBacking) stale() bool { return true }

// path is "": a stored session is no file here; the store's events tell
// of changes (the viewer's) and calls read them.
func (b *storeBacking) path() string { return "" }

// reopen reads into the handle what other hosts wrote: the new lines, or
// the whole session after a rewrite or an outage. It reports a change
// (done not nil) only when something arrived, so the engine resyncs only
// then.
func (b *storeBacking) reopen(accept func(session.Backend) error) (func(), reopened, error) {
	before := b.h.File()
	lines := 0
	var last string
	if before != nil {
		lines, last = len(before.Entries), store.LastID(before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	gen := b.src.reloadAll.Load()
	if b.rewritten.Swap(false) || b.reloads.Load() != gen {
		err = b.h.Reload(ctx)
		if err == nil {
			b.reloads.Store(gen)
			if err := accept(b.h); err != nil {
				return nil, reopened{}, err
			}
			// Read whole again: another host's prune, or what the
			// daemon could not follow while the store was away.
			return func() {}, reopened{rewritten: true}, nil
		}
		b.rewritten.Store(true) // try again next time
	} else {
		err = b.h.Refresh(ctx)
	}
	if err != nil {
		if errors.Is(err, store.ErrUnavailable) {
			b.src.unavailable()
		}
		return nil, reopened{}, fmt.Errorf("session %q: %w", b.rel, err)
	}
	after := b.h.File()
	if after == before && len(after.Entries) == lines && store.LastID(after) == last {
		return nil, reopened{}, nil
	}
	if err := accept(b.h); err != nil {
		return nil, reopened{}, err
	}
	// A new File is a whole read (the catch-up found the lines it had
	// read moved): a rewrite, not only appends.
	return func() {}, reopened{rewritten: before != nil && after != before}, nil
}

// reaches: a stored session has one name, its key.
func (b *storeBacking) reaches(rel string) bool { return rel == b.rel }

func (b *storeBacking) close() error {
	b.src.forget(b)
	return nil
}

// wireEvent is an engine event as published to the other hosts: the
// fields a WatchEvents client gets, small enough for the store's payload
// limit (free text is cut).
type wireEvent struct {
	Host         string `json:"host"`
	Kind         string `json:"kind"`
	Time         int64  `json:"time"`
	Reason       string `json:"reason,omitempty"`
	Aborted      bool   `json:"aborted,omitempty"`
	Cancelled    bool   `json:"cancelled,omitempty"`
	WillRetry    bool   `json:"willRetry,omitempty"`
	Continue     string `json:"continue,omitempty"`
	Error        string `json:"error,omitempty"`
	Plugin       string `json:"plugin,omitempty"`
	TokensBefore int    `json:"tokensBefore,omitempty"`
	TokensAfter  int    `json:"tokensAfter,omitempty"`
	EntryID      string `json:"entryId,omitempty"`
}

// maxWireText bounds each free-text field at first; encode cuts further
// when escaping made the payload too large for the store.
const maxWireText = 1024

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func wireOf(host string, ev engine.Event) wireEvent {
	return wireEvent{
		Host: host, Kind: string(ev.Kind), Time: ev.Time.UnixNano(), Reason: string(ev.Reason),
		Aborted: ev.Aborted, Cancelled: ev.Cancelled, WillRetry: ev.WillRetry, Continue: ev.Continue,
		Error: ev.Error, Plugin: ev.Plugin, TokensBefore: ev.TokensBefore, TokensAfter: ev.TokensAfter, EntryID: ev.EntryID,
	}
}

// encode is the event's JSON within store.MaxPayload: the free text is
// cut shorter until it fits (a character may take six bytes escaped).
func (w wireEvent) encode() ([]byte, error) {
	for n := maxWireText; ; n /= 2 {
		w.Continue, w.Error, w.Plugin, w.EntryID = cut(w.Continue, n), cut(w.Error, n), cut(w.Plugin, n), cut(w.EntryID, n)
		b, err := json.Marshal(w)
		if err != nil || len(b) <= store.MaxPayload || n == 0 {
			return b, err
		}
	}
}

func (w wireEvent) event() engine.Event {
	return engine.Event{
		Kind: engine.EventKind(w.Kind), Time: time.Unix(0, w.Time), Reason: engine.Reason(w.Reason),
		Aborted: w.Aborted, Cancelled: w.Cancelled, WillRetry: w.WillRetry, Continue: w.Continue,
		Error: w.Error, Plugin: w.Plugin, TokensBefore: w.TokensBefore, TokensAfter: w.TokensAfter, EntryID: w.EntryID,
	}
}
