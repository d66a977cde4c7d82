package connlimit

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// Caps are the bounds of one Counter.
type Caps struct {
	// Total bounds what is held at once in all.
	Total int
	// PerAddress bounds what one remote address holds at once (see
	// AddressKey); 0: no bound of its own. A connection without a
	// remote address (a unix socket's) counts only in Total.
	PerAddress int
}

// Refusal reasons, matched with errors.Is.
var (
	// ErrTotal: the Counter holds Caps.Total already.
	ErrTotal = errors.New("too many connections")
	// ErrPerAddress: the remote address holds Caps.PerAddress already.
	ErrPerAddress = errors.New("too many connections from this address")
)

// Counter counts holds in all and per key within its Caps. It is safe
// for concurrent use.
type Counter struct {
	caps  Caps
	mu    sync.Mutex
	total int
	per   map[string]int
}

// NewCounter returns a Counter bounded by caps.
func NewCounter(caps Caps) *Counter {
	return &Counter{caps: caps, per: map[string]int{}}
}

// Caps are the Counter's bounds.
func (c *Counter) Caps() Caps { return c.caps }

// Take takes one hold for key ("" for no address: only the total
// counts), or refuses with ErrTotal or ErrPerAddress. A refusal is
// immediate, never a wait: waiting would hold what the cap is there to
// bound. release gives the hold back; it may be called more than once.
func (c *Counter) Take(key string) (release func(), err error) {
	if err := c.take(key); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { c.give(key) }) }, nil
}

func (c *Counter) take(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The address's cap first: ErrTotal then says that only the total
	// stands in the way (the listener may make room for it).
	perAddress := key != "" && c.caps.PerAddress > 0
	if n := c.per[key]; perAddress && n >= c.caps.PerAddress {
		return fmt.Errorf("%w (%d held by %s, the cap)", ErrPerAddress, n, key)
	}
	if c.total >= c.caps.Total {
		return fmt.Errorf("%w (%d held, the cap)", ErrTotal, c.total)
	}
	if perAddress {
		c.per[key]++
	}
	c.total++
	return nil
}

func (c *Counter) give(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if key != "" && c.caps.PerAddress > 0 {
		if c.per[key]--; c.per[key] <= 0 {
			delete(c.per, key)
		}
	}
}

// Held is what the Counter holds in all, and for key.
func (c *Counter) Held(key string) (total, forKey int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.per[key]
}

// AddressKey is the remote address a connection counts against for the
// per-address cap: an IPv4 address, or an IPv6 address's /64 — the block
// one host or one customer of a provider is given, which it can fill with
// addresses at will. A connection without an IP address (a unix socket:
// every peer is a process allowed to open the socket, mode 0600, so the
// daemon's own user) has the key "" and counts only in the listener's
// total.
func AddressKey(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return keyOf(ta.AddrPort().Addr())
	}
	return ""
}

// RemoteKey is AddressKey of an HTTP request's RemoteAddr (host:port).
func RemoteKey(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return ""
	}
	return keyOf(ap.Addr())
}

func keyOf(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		return ip.String()
	case ip.Is6():
		p, _ := ip.WithZone("").Prefix(64)
		return p.String()
	}
	return ""
}
