package config

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Change describes one swap of the configuration in force.
type Change struct {
	Old, New *Config
	// Keys are the flattened keys whose value differs (see
	// Config.Flatten), sorted: "compaction.keepRecentTokens",
	// "plugins[audit].timeout", "plugins" (the order of names).
	Keys []string
	// Version of New; the first configuration of a Store is version 1.
	Version uint64
}

// Has reports whether key, or any key under it, changed: Has("compaction")
// is true when compaction.reserveTokens changed, Has("plugins[audit]") when
// any key of that plugin did.
func (c Change) Has(key string) bool {
	for _, k := range c.Keys {
		if k == key || len(k) > len(key) && k[:len(key)] == key && (k[len(key)] == '.' || k[len(key)] == '[') {
			return true
		}
	}
	return false
}

// Diff returns the flattened keys whose values differ between two
// configurations, sorted.
func Diff(old, new *Config) []string {
	a, b := old.Flatten(), new.Flatten()
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Store holds the configuration in force. Readers take a snapshot with
// Snapshot, lock-free; an operation keeps the snapshot it started with.
// Swaps are serialized and announced to subscribers in order.
type Store struct {
	cur     atomic.Pointer[Config]
	version atomic.Uint64

	swapMu sync.Mutex // serializes Swap, so subscribers see changes in order

	subMu  sync.Mutex
	subs   []subscription
	nextID int
}

type subscription struct {
	id int
	fn func(Change)
}

// NewStore returns a Store holding initial, or the defaults when initial is
// nil. The Store takes ownership: initial must not be modified afterwards.
func NewStore(initial *Config) *Store {
	if initial == nil {
		initial = Defaults()
	}
	s := &Store{}
	s.cur.Store(initial)
	s.version.Store(1)
	return s
}

// Snapshot returns the configuration in force. It is never modified; the
// caller must not modify it either.
func (s *Store) Snapshot() *Config { return s.cur.Load() }

// Version counts the configurations the Store has held, starting at 1.
func (s *Store) Version() uint64 { return s.version.Load() }

// Subscribe calls fn after every swap, with the old and new snapshot and the
// changed keys. Calls are made one at a time, in swap order, on the
// goroutine that swaps (the watcher's): fn must be quick and must not call
// Swap. The returned function cancels the subscription.
func (s *Store) Subscribe(fn func(Change)) (cancel func()) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.nextID++
	id := s.nextID
	s.subs = append(s.subs, subscription{id: id, fn: fn})
	return func() {
		s.subMu.Lock()
		defer s.subMu.Unlock()
		for i, sub := range s.subs {
			if sub.id == id {
				s.subs = append(s.subs[:i:i], s.subs[i+1:]...)
				return
			}
		}
	}
}

// Swap puts next in force and tells the subscribers. next must be a
// validated configuration that nobody modifies afterwards. Swapping in a
// configuration equal to the current one still swaps, with no keys. While
// a Watcher manages the Store, swap through it (Reload) instead: a direct
// Swap makes the reload being prepared fail with ErrConcurrentSwap after
// its OnReload already ran.
func (s *Store) Swap(next *Config) Change {
	ch, _ := s.swap(nil, next)
	return ch
}

// SwapIf is Swap only while old is still in force, for callers that
// prepared next against old (the watcher's OnReload). It reports whether it
// swapped.
func (s *Store) SwapIf(old, next *Config) (Change, bool) {
	return s.swap(old, next)
}

func (s *Store) swap(expect, next *Config) (Change, bool) {
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	old := s.cur.Load()
	if expect != nil && old != expect {
		return Change{}, false
	}
	keys := Diff(old, next)
	s.cur.Store(next)
	ch := Change{Old: old, New: next, Keys: keys, Version: s.version.Add(1)}

	s.subMu.Lock()
	subs := append([]subscription(nil), s.subs...)
	s.subMu.Unlock()
	for _, sub := range subs {
		sub.fn(ch)
	}
	return ch, true
}
