package served

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/files"
)

// Stored serves the sessions of a shared store (sessions.store: a
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
//   - After the store was unavailable, or when another host rewrote the
//     session (prune), the session is read whole again.
//
// The engine events hosts publish through the store are not its concern:
// it hands them on (StoredOptions.Published) to the daemon's relay.
type Stored struct {
	st   store.Store
	opts StoredOptions
	stop context.CancelFunc
	done sync.WaitGroup

	mu     sync.Mutex
	byName map[string]*storedBacking // by name, for the store's events
	// reloadAll is set when the store was unavailable: the watch may have
	// missed rewrites meanwhile, so every session is read whole again.
	reloadAll atomic.Uint64
}

// StoredOptions configure a Stored source.
type StoredOptions struct {
	// Holder names this host in the sessions' leases (NewHolder).
	Holder   string
	LeaseTTL time.Duration
	Logger   hclog.Logger
	// Bound is server.maxSessionBytes as it is now: every reading of a
	// session — whole, or what other hosts appended, before a call or
	// while an append catches up — is admitted by it
	// (store.SessionOptions.Admit).
	Bound SessionBound
	// Changed tells of every change any host made to a session (the
	// store event's kind), once the sessions open here know of it.
	Changed func(name, kind string)
	// Published hands on an engine event some host published for the
	// session name (this host's own among them).
	Published func(name string, payload []byte)
}

// NewHolder is a name for this process, unique among the hosts of a
// store: host name, process id and a random part.
func NewHolder() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// NewStored serves the sessions of st and follows its watch until Close.
func NewStored(st store.Store, opts StoredOptions) (*Stored, error) {
	if opts.Holder == "" {
		opts.Holder = NewHolder()
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Stored{st: st, opts: opts, stop: cancel, byName: map[string]*storedBacking{}}
	events, err := st.Watch(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch the session store: %w", err)
	}
	s.done.Add(1)
	go s.watch(events)
	return s, nil
}

// admit is the bound on what a stored session's handle takes in.
func (s *Stored) admit(size int64) error { return s.opts.Bound.Admit("the session would hold", size) }

// StoredKey is the key of the stored session named rel (Backing.Key).
func StoredKey(rel string) any { return "store:" + rel }

func (s *Stored) Open(ctx context.Context, rel string, create bool, cwd string, seen func(key any, size int64) (bool, error)) (Backing, bool, error) {
	if known, err := seen(StoredKey(rel), -1); known || err != nil {
		return nil, false, err
	}
	created := false
	opts := store.SessionOptions{Holder: s.opts.Holder, LeaseTTL: s.opts.LeaseTTL, Logger: s.opts.Logger.Named("store").With("session", rel), Admit: s.admit}
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
		return nil, false, fmt.Errorf("session %q: %w", rel, err)
	}
	b := &storedBacking{src: s, rel: rel, h: h}
	b.reloads.Store(s.reloadAll.Load())
	s.mu.Lock()
	s.byName[rel] = b
	s.mu.Unlock()
	return b, created, nil
}

// Load is Files.Load for a stored session: its size is asked before it
// is read (Store.ExportWithin), where the whole session used to be read
// and parsed first and its entries' bytes counted after.
func (s *Stored) Load(ctx context.Context, rel string, maxBytes int64) (*session.File, error) {
	data, err := s.st.ExportWithin(ctx, rel, func(size int64) error {
		return OverBound(fmt.Sprintf("session %q is", rel), size, maxBytes)
	})
	if errors.Is(err, ErrLimit) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("session %q: %w", rel, err)
	}
	f, err := session.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("session %q: %w", rel, err)
	}
	return f, nil
}

// List names the store's sessions that may accepts, at most max of them,
// sorted (the store's order).
func (s *Stored) List(ctx context.Context, may func(name string) bool, max int) ([]string, error) {
	all, err := s.st.List(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range all {
		if store.CheckName(n) == nil && may(n) {
			names = append(names, n)
			if len(names) >= max {
				break
			}
		}
	}
	return names, nil
}

// watch follows the store's events until the source closes.
func (s *Stored) watch(events <-chan store.Event) {
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
			if s.opts.Published != nil {
				s.opts.Published(ev.Session, ev.Payload)
			}
			continue
		}
		// Told after the flags above are set: the follower it wakes
		// must see a rewrite as one (read whole, session_rewritten).
		if s.opts.Changed != nil {
			s.opts.Changed(ev.Session, ev.Kind)
		}
	}
}

// unavailable notes that the store could not be reached: every session
// is read whole before its next call.
func (s *Stored) unavailable() { s.reloadAll.Add(1) }

func (s *Stored) forget(b *storedBacking) {
	s.mu.Lock()
	if s.byName[b.rel] == b {
		delete(s.byName, b.rel)
	}
	s.mu.Unlock()
}

func (s *Stored) Close() error {
	s.stop()
	s.done.Wait()
	return nil
}

// storedBacking is one session of the store open in the daemon.
type storedBacking struct {
	src *Stored
	rel string
	h   *store.Session
	// rewritten: another host replaced the session (prune); reloads is
	// the source's unavailability count when it was last read whole.
	rewritten atomic.Bool
	reloads   atomic.Uint64

	// sized caches Size: the File it was counted over, how many of its
	// entries, and their bytes. A catch-up only appends to the same File,
	// so each write adds up just the new entries; a whole read gives a new
	// File and a new count.
	sizeMu     sync.Mutex
	sizedFile  *session.File
	sizedCount int
	sizedBytes int64
}

func (b *storedBacking) Handle() session.Backend { return b.h }

func (b *storedBacking) Key() any { return StoredKey(b.rel) }

// Size adds up the lines read, with their newlines: the daemon checks it
// on every write, so only entries not counted before are added.
func (b *storedBacking) Size() int64 {
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

// Stale is always true: another host may have appended, and the next
// call must see it. Reopen finds out cheaply whether anything changed.
func (b *storedBacking) Stale() bool { return true }

// Follow does nothing: a stored session is no file here; the store's
// watch, which reports every host's changes, tells the daemon
// (StoredOptions.Changed), which pokes its followers.
func (b *storedBacking) Follow(func()) (func(), error) { return func() {}, nil }

// Reopen reads into the handle what other hosts wrote: the new lines, or
// the whole session after a rewrite or an outage. It reports a change
// (done not nil) only when something arrived, so the engine resyncs only
// then.
func (b *storedBacking) Reopen(accept func(session.Backend) error) (func(), Reopened, error) {
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
				return nil, Reopened{}, err
			}
			// Read whole again: another host's prune, or what the
			// daemon could not follow while the store was away.
			return func() {}, Reopened{Rewritten: true}, nil
		}
		b.rewritten.Store(true) // try again next time
	} else {
		err = b.h.Refresh(ctx)
	}
	if err != nil {
		if errors.Is(err, store.ErrUnavailable) {
			b.src.unavailable()
		}
		return nil, Reopened{}, fmt.Errorf("session %q: %w", b.rel, err)
	}
	after := b.h.File()
	if after == before && len(after.Entries) == lines && store.LastID(after) == last {
		return nil, Reopened{}, nil
	}
	if err := accept(b.h); err != nil {
		return nil, Reopened{}, err
	}
	// A new File is a whole read (the catch-up found the lines it had
	// read moved): a rewrite, not only appends.
	return func() {}, Reopened{Rewritten: before != nil && after != before}, nil
}

// Reaches: a stored session has one name, its key.
func (b *storedBacking) Reaches(rel string) bool { return rel == b.rel }

func (b *storedBacking) Close() error {
	b.src.forget(b)
	return nil
}
