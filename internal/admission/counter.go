package admission

import (
	"sync"
)

// Caps are the bounds of one hold taken from a Counter: what is held in
// all, and what one key holds. 0 is no bound of that kind. They are given
// with each hold rather than fixed in the Counter, so that a bound read
// from the configuration in force applies at once (a reload lowering it
// refuses new holds at once and ends none).
type Caps struct {
	// Total bounds what is held at once in all.
	Total int
	// PerKey bounds what one key (a caller, a remote address) holds at
	// once.
	PerKey int
}

// Keys says what a Counter's keys are, which decides the bound a refusal
// of one key's share names (ErrCallerLimit or ErrAddressLimit).
type Keys int

const (
	// Callers: keys are callers, told apart by their credentials.
	Callers Keys = iota
	// Addresses: keys are remote addresses (AddressKey).
	Addresses
)

// Counter counts holds in all and per key. A hold past a bound is
// refused at once, never waited for: waiting would hold what the bound
// is there to cap (a goroutine, a request's buffers), and a client told
// to come back later backs off as gRPC and HTTP clients do. The zero
// Counter counts callers and is ready to use; it is safe for concurrent
// use.
type Counter[K comparable] struct {
	// Keys is what the keys are (the zero value: Callers).
	Keys  Keys
	mu    sync.Mutex
	total int
	per   map[K]int
}

// Acquire takes one hold for key within caps, or refuses with a
// *Refusal. The key's share is checked first: a refusal at the total
// then says that only the whole stands in the way (a listener may make
// room for it). Release gives the hold back; call it once per hold.
// Acquire and Release allocate nothing once the key is known; Take wraps
// them in a release function.
func (c *Counter[K]) Acquire(key K, caps Caps) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.per == nil {
		c.per = map[K]int{}
	}
	if n := c.per[key]; caps.PerKey > 0 && n >= caps.PerKey {
		bound := ErrCallerLimit
		if c.Keys == Addresses {
			bound = ErrAddressLimit
		}
		return &Refusal{Bound: bound, Held: n, Cap: caps.PerKey}
	}
	if caps.Total > 0 && c.total >= caps.Total {
		return &Refusal{Bound: ErrCapacity, Held: c.total, Cap: caps.Total}
	}
	c.per[key]++
	c.total++
	return nil
}

// Release gives back a hold Acquire took for key.
func (c *Counter[K]) Release(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.per[key]--; c.per[key] <= 0 {
		delete(c.per, key)
	}
}

// Take is Acquire with the hold's release function, which may be called
// more than once (the hold is given back once).
func (c *Counter[K]) Take(key K, caps Caps) (release func(), err error) {
	if err := c.Acquire(key, caps); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { c.Release(key) }) }, nil
}

// Held is what the Counter holds in all, and for key.
func (c *Counter[K]) Held(key K) (total, forKey int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.per[key]
}
