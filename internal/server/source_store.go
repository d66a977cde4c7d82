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
	"github.com/pith-dev/pith/store/files"
)

// storeSource serves the sessions of a shared store (sessions.store: a
// PostgreSQL database several hosts use). Names, tenant prefixes and
// tokens are those of the files; what differs:
//
//   - Another host may append at any time, so every call first reads what
//     the others appended (one small query) and rebuilds the engine when
//     something arrived: a call sees every write committed before it began,
//     through any host. A write still commits only against the last entry
//     read; one that lost a race catches up and goes on at the new leaf
//     (store.Session.Append), and only one with nowhere it belongs
//     (another host's navigation or prune meanwhile) is store.ErrConflict:
//     Aborted.
//   - Compaction and prune run under the session's lease in the store
//     (the engine takes it through session.Leaser); a host that dies loses
//     it after sessions.leaseTTL.
//   - Engine events are published through the store, and the events other
//     hosts published are delivered to this host's watchers (WatchEvents);
//     one the store refuses while it is down is sent again once it is
//     back (publishLoop).
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
	// maxBytes is server.maxSessionBytes as it is now: every reading of
	// a session — whole, or what other hosts appended, before a call or
	// while an append catches up — holds it (store.SessionOptions).
	maxBytes func() int64

	// outbox queues this host's engine events for publication, so a slow
	// or unreachable database never holds up an engine.
	outbox chan published
	stop   context.CancelFunc
	done   sync.WaitGroup

	// lost names the sessions whose events the outbox dropped, told to
	// the other hosts once the store takes events again.
	// Each is the number of the first event dropped (published counts
	// them): the marker follows the events queued before it.
	lostMu    sync.Mutex
	lost      map[string]uint64
	published atomic.Uint64
	// unsent counts the sends the store refused (a test waits for one).
	unsent atomic.Int64

	mu     sync.Mutex
	byName map[string]*storeBacking // by name, for the store's events
	// reloadAll is set when the store was unavailable: the watch may have
	// missed rewrites meanwhile, so every session is read whole again.
	reloadAll atomic.Uint64
}

// published is one engine event on its way to the other hosts, and its
// number in the order this host published them.
type published struct {
	name string
	ev   engine.Event
	n    uint64
}

// outboxSize is how many events may wait for the database; past it they
// are dropped (and logged), and once the database takes events again the
// other hosts are told the session's events were lost (eventsLost): their
// watchers' streams end, as a watcher's that fell behind, so their
// clients watch again and read the session. This host's watchers still
// get every event.
var outboxSize = 1024 // a variable for a test's small outbox

// eventsLost is the kind of the marker a host publishes for a session
// whose events it could not keep for the other hosts; it is never
// delivered as an event.
const eventsLost engine.EventKind = "pith.events_lost"

// publishRetry is the first wait before an event the store refused as
// unavailable is sent again; the wait doubles up to publishRetryMax. The
// events behind it wait, in order: they reach the other hosts when the
// database is back.
const (
	publishRetry    = 100 * time.Millisecond
	publishRetryMax = 2 * time.Second
)

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
	opts := store.SessionOptions{Holder: s.holder, LeaseTTL: s.ttl, Logger: s.log.Named("store").With("session", rel), MaxBytes: s.maxBytes}
	h, err := store.OpenSession(ctx, s.st, rel, opts)
	if errors.Is(err, store.ErrNotFound) && create {
		err = s.st.Create(ctx, rel, files.Options{}.HeaderLine(cwd))
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
			if engine.EventKind(w.Kind) == eventsLost {
				s.lostElsewhere(storeKey(ev.Session))
				continue
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
	n := s.published.Add(1)
	select {
	case s.outbox <- published{rel, ev, n}:
	default:
		s.log.Warn("too many engine events waiting for the session store; one is not sent to the other hosts, which are told so once the store is back", "session", rel, "kind", ev.Kind)
		s.lostMu.Lock()
		if _, ok := s.lost[rel]; !ok {
			if s.lost == nil {
				s.lost = map[string]uint64{}
			}
			s.lost[rel] = n
		}
		s.lostMu.Unlock()
	}
}

// publishLoop sends the queued events in order. One the store refuses as
// unavailable is sent again, after a wait that doubles, until it goes
// through or the source closes: an event published while the database
// is down reaches the other hosts when it is back, not only this one.
func (s *storeSource) publishLoop(ctx context.Context) {
	defer s.done.Done()
	send := func(ctx context.Context, name string, w wireEvent) error {
		payload, err := w.encode()
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = s.st.Publish(pctx, name, payload)
			cancel()
		}
		return err
	}
	// deliver sends p, retrying while the store is unavailable; false
	// when ctx ended first (p is then still to send).
	deliver := func(ctx context.Context, p published) bool {
		warned := false
		for wait := publishRetry; ; wait = min(2*wait, publishRetryMax) {
			err := send(ctx, p.name, wireOf(s.holder, p.ev))
			if err == nil {
				s.tellLost(ctx, p.n, send)
				return true
			}
			if ctx.Err() != nil {
				return false
			}
			s.unsent.Add(1)
			if !errors.Is(err, store.ErrUnavailable) {
				s.log.Warn("an engine event did not reach the other hosts", "session", p.name, "kind", p.ev.Kind, "error", err)
				return true
			}
			if !warned {
				s.log.Warn("the session store is unavailable; engine events wait for it to reach the other hosts", "session", p.name, "kind", p.ev.Kind, "error", err)
				warned = true
			}
			select {
			case <-ctx.Done():
				return false
			case <-time.After(wait):
			}
		}
	}
	// drain sends, briefly, what is left at shutdown (a compaction that
	// ended as its session closed), starting with pending.
	drain := func(pending *published) {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if pending != nil && send(dctx, pending.name, wireOf(s.holder, pending.ev)) != nil {
			return
		}
		for {
			select {
			case p := <-s.outbox:
				if send(dctx, p.name, wireOf(s.holder, p.ev)) != nil {
					return
				}
			default:
				return
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			drain(nil)
			return
		case p := <-s.outbox:
			if !deliver(ctx, p) {
				drain(&p)
				return
			}
		}
	}
}

// tellLost publishes, once the store takes events again, the marker of
// each session whose events the outbox dropped: after the events queued
// before the first one dropped (sent is the number of the one just sent),
// or once nothing waits.
func (s *storeSource) tellLost(ctx context.Context, sent uint64, send func(context.Context, string, wireEvent) error) {
	s.lostMu.Lock()
	if len(s.lost) == 0 {
		s.lostMu.Unlock()
		return
	}
	idle := len(s.outbox) == 0
	var due []string
	for name, first := range s.lost {
		if idle || sent > first {
			due = append(due, name)
			delete(s.lost, name)
		}
	}
	s.lostMu.Unlock()
	for _, name := range due {
		if err := send(ctx, name, wireEvent{Host: s.holder, Kind: string(eventsLost), Time: time.Now().UnixNano()}); err != nil {
			// Told after the next event that goes through.
			s.lostMu.Lock()
			if _, ok := s.lost[name]; !ok {
				s.lost[name] = 0
			}
			s.lostMu.Unlock()
		}
	}
}

// lostElsewhere ends the streams of this host's watchers of the session
// under key as streams that fell behind: another host lost events of it,
// so they watch again and read the session.
func (s *storeSource) lostElsewhere(key any) {
	s.deliver(key, engine.Event{Kind: eventsLost, Time: time.Now()})
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
