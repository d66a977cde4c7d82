// Package signin keeps the sign-ins of a web page: opaque random ids
// handed to a browser in a cookie, each standing for a credential the
// daemon checked once (a bearer token, known here only by its SHA-256).
//
// A browser cannot send an authorization header of its own, and the
// cookie it keeps instead is sent to every port of the host (cookies are
// not isolated by port): a cookie holding the token itself went to any
// other server on the same machine. An id is worth nothing outside the
// daemon's memory — it is not a credential anywhere else, and it ends at
// a sign-out, after an idle time, after an absolute age, and when the
// daemon stops.
package signin

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"
)

// Limits bound the live sign-ins: in total, and per subject (one token),
// so that a client posting the sign-in form in a loop with a valid token
// replaces its own oldest sign-ins instead of growing memory or ending
// everybody else's.
const (
	MaxLive       = 4096
	MaxPerSubject = 64
)

// Options configure a Store. Idle and MaxAge are asked at every use, so
// a configuration reload applies at once, to existing sign-ins too.
type Options struct {
	// Idle ends a sign-in not used for that long.
	Idle func() time.Duration
	// MaxAge ends a sign-in that long after it began, used or not.
	MaxAge func() time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Store is the set of live sign-ins. Only the SHA-256 of an id is kept:
// what the store holds cannot be replayed as a cookie.
type Store struct {
	opts  Options
	mu    sync.Mutex
	live  map[[sha256.Size]byte]*entry
	count map[string]int // live sign-ins by subject
}

type entry struct {
	subject string
	begun   time.Time
	used    time.Time
	ended   chan struct{} // closed when the sign-in ends here
}

// New returns an empty store.
func New(o Options) *Store {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{opts: o, live: map[[sha256.Size]byte]*entry{}, count: map[string]int{}}
}

// Session is what an id stands for.
type Session struct {
	// Subject is what was checked at sign-in (a token's SHA-256).
	Subject string
	// Expires is the latest moment it can end on its own: its absolute
	// age (idle expiry may come first).
	Expires time.Time
	// Ended is closed when the sign-in is ended by Delete, by a newer
	// sign-in taking its place, or found expired.
	Ended <-chan struct{}
}

// Create begins a sign-in for subject and returns its id: 256 random
// bits, URL-safe base64.
func (s *Store) Create(subject string) (id string, sess Session) {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand panics rather)
	id = base64.RawURLEncoding.EncodeToString(raw[:])
	now := s.opts.Now()
	e := &entry{subject: subject, begun: now, used: now, ended: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count[subject] >= MaxPerSubject || len(s.live) >= MaxLive {
		s.expireLocked(now)
		s.makeRoomLocked(subject)
	}
	s.live[sha256.Sum256([]byte(id))] = e
	s.count[subject]++
	return id, s.sessionLocked(e)
}

// Lookup is the live sign-in of id, and marks it used now (its idle time
// starts again).
func (s *Store) Lookup(id string) (Session, bool) { return s.find(id, true) }

// Peek is Lookup without marking the sign-in used: a check that a live
// update stream still may run is no sign that someone is there.
func (s *Store) Peek(id string) (Session, bool) { return s.find(id, false) }

func (s *Store) find(id string, touch bool) (Session, bool) {
	if id == "" {
		return Session{}, false
	}
	key := sha256.Sum256([]byte(id))
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live[key]
	if !ok {
		return Session{}, false
	}
	if s.expired(e, now) {
		s.endLocked(key, e)
		return Session{}, false
	}
	if touch {
		e.used = now
	}
	return s.sessionLocked(e), true
}

// Delete ends the sign-in of id (a sign-out); an unknown id is no error.
func (s *Store) Delete(id string) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.live[key]; ok {
		s.endLocked(key, e)
	}
}

// Len is the number of sign-ins held (expired ones not yet swept
// included).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

func (s *Store) sessionLocked(e *entry) Session {
	return Session{Subject: e.subject, Expires: e.begun.Add(s.opts.MaxAge()), Ended: e.ended}
}

func (s *Store) expired(e *entry, now time.Time) bool {
	return now.Sub(e.used) >= s.opts.Idle() || now.Sub(e.begun) >= s.opts.MaxAge()
}

func (s *Store) endLocked(key [sha256.Size]byte, e *entry) {
	delete(s.live, key)
	if s.count[e.subject]--; s.count[e.subject] <= 0 {
		delete(s.count, e.subject)
	}
	close(e.ended)
}

// expireLocked sweeps the expired sign-ins; only when a sign-in needs
// room, so a store holds at most MaxLive whatever their expiry (an
// expired one is refused when presented).
func (s *Store) expireLocked(now time.Time) {
	for k, e := range s.live {
		if s.expired(e, now) {
			s.endLocked(k, e)
		}
	}
}

// makeRoomLocked ends sign-ins until one more for subject fits: the
// subject's own least recently used one past MaxPerSubject; past MaxLive,
// the least recently used one of the subject holding the most.
func (s *Store) makeRoomLocked(subject string) {
	for s.count[subject] >= MaxPerSubject || len(s.live) >= MaxLive {
		from := subject
		if s.count[subject] < MaxPerSubject {
			for c, n := range s.count {
				if n > s.count[from] {
					from = c
				}
			}
		}
		var oldest *entry
		var key [sha256.Size]byte
		for k, e := range s.live {
			if e.subject == from && (oldest == nil || e.used.Before(oldest.used)) {
				oldest, key = e, k
			}
		}
		s.endLocked(key, oldest)
	}
}

// Retain ends every sign-in whose subject keep refuses (a token no
// longer configured).
func (s *Store) Retain(keep func(subject string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.live {
		if !keep(e.subject) {
			s.endLocked(k, e)
		}
	}
}
