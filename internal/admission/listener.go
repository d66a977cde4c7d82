package admission

import (
	"container/list"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Options configure Listen.
type Options struct {
	// Caps bound the connections: Total the listener's
	// (server.maxConnections), PerKey one remote address's
	// (server.maxConnectionsPerAddress, by AddressKey).
	Caps Caps
	// Name says which listener a log line is about ("grpc", "viewer").
	Name string
	// Logger gets the refusals and the accept errors, at most one line
	// per logEvery of each; nil: none.
	Logger hclog.Logger
}

// logEvery spaces the log lines of a flood: one line with the count
// since the last, not one per connection.
const logEvery = 10 * time.Second

// Back-off bounds after a failed accept, as net/http's.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
)

// Listener is a net.Listener bounded by its Caps. Accept returns only
// connections within them; the others are closed as soon as accepted.
type Listener struct {
	net.Listener
	caps   Caps
	count  Counter[string]
	name   string
	log    hclog.Logger
	closed chan struct{}
	once   sync.Once

	refused  atomic.Int64 // connections closed at a cap, in all
	lastLog  time.Time    // guarded by logMu
	unlogged int64        // refusals since the last line; guarded by logMu
	// lastAccept is the last accept error's line; guarded by logMu.
	lastAccept time.Time

	// silent are the connections accepted that have not sent a byte
	// yet, oldest first (evictSilent).
	silentMu sync.Mutex
	silent   list.List
	logMu    sync.Mutex
}

// Listen wraps l: every listener of the product goes through it.
func Listen(l net.Listener, o Options) *Listener {
	log := o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Listener{Listener: l, caps: o.Caps, count: Counter[string]{Keys: Addresses}, name: o.Name, log: log, closed: make(chan struct{})}
}

// Caps are the listener's bounds.
func (l *Listener) Caps() Caps { return l.caps }

// Refused counts the connections closed at a cap since Listen.
func (l *Listener) Refused() int64 { return l.refused.Load() }

// Held is the number of connections held, in all and for key.
func (l *Listener) Held(key string) (total, forKey int) { return l.count.Held(key) }

// Accept waits for a connection within the caps. A connection past one
// is closed at once (with a reset on TCP, so the daemon keeps nothing of
// it, not even a TIME_WAIT entry) and the next is waited for — except
// that at the listener's cap the oldest connection that has sent
// nothing yet is closed instead, when there is one (evictSilent). An accept
// that fails for want of resources (no descriptor left, no buffer
// memory) is retried after a back-off, doubling from 5 ms to 1 s, so
// the listener neither spins on a full descriptor table nor gives up:
// the servers above it stop serving on any error Accept returns.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !exhausted(err) {
				return nil, err
			}
			delay = min(max(2*delay, minBackoff), maxBackoff)
			l.logAcceptError(err, delay)
			select {
			case <-time.After(delay):
				continue
			case <-l.closed:
				return nil, net.ErrClosed
			}
		}
		delay = 0
		key := AddressKey(c.RemoteAddr())
		err = l.take(key)
		if errors.Is(err, ErrCapacity) && l.evictSilent() {
			err = l.take(key)
		}
		if err != nil {
			l.refuse(c, err)
			continue
		}
		lc := &conn{Conn: c, key: key, l: l}
		l.silentMu.Lock()
		lc.elem = l.silent.PushBack(lc)
		l.silentMu.Unlock()
		return lc, nil
	}
}

// take is a connection's hold for the remote address key, or the
// refusal in the listener's words (its log line's reason).
func (l *Listener) take(key string) error {
	err := l.count.Acquire(key, AddressCaps(key, l.caps))
	var r *Refusal
	if !errors.As(err, &r) {
		return err
	}
	if r.Bound == ErrAddressLimit {
		return r.Explained(fmt.Errorf("too many connections from this address (%d held by %s, the cap)", r.Held, key))
	}
	return r.Explained(fmt.Errorf("too many connections (%d held, the cap)", r.Held))
}

// evictSilent closes the oldest connection that has not sent a byte
// yet, to make room at the listener's cap: idle connections opened from
// many addresses — each within its per-address cap — would otherwise
// fill the cap and lock out every client until their handshake timeout,
// and keeping the cap full would take only maxConnections connections
// per handshake timeout. A client sends its first bytes (a TLS hello, the
// HTTP/2 preface, a request) as soon as it is connected, so the oldest
// silent connection is the least likely to be one; a connection that
// spoke is never evicted. False when every connection has spoken.
func (l *Listener) evictSilent() bool {
	l.silentMu.Lock()
	e := l.silent.Front()
	if e == nil {
		l.silentMu.Unlock()
		return false
	}
	lc := l.silent.Remove(e).(*conn)
	lc.elem = nil
	l.silentMu.Unlock()
	l.refuse(lc, errEvicted)
	return true
}

// errEvicted is why a silent connection was closed (evictSilent).
var errEvicted = errors.New("the oldest connection that had sent nothing was closed to make room")

// spoke stops c from being evicted.
func (l *Listener) spoke(c *conn) {
	l.silentMu.Lock()
	defer l.silentMu.Unlock()
	if c.elem != nil {
		l.silent.Remove(c.elem)
		c.elem = nil
	}
}

// Close closes the listener and ends a back-off in progress.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// exhausted reports an accept error that passes once resources are
// given back: the descriptor table full (the process's or the system's)
// or the kernel out of memory for a socket.
func exhausted(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (l *Listener) refuse(c net.Conn, why error) {
	tc, ok := c.(*net.TCPConn)
	if lc, wrapped := c.(*conn); wrapped {
		tc, ok = lc.Conn.(*net.TCPConn)
	}
	if ok {
		_ = tc.SetLinger(0)
	}
	l.refused.Add(1) // counted before the client can see the close
	_ = c.Close()
	l.logMu.Lock()
	defer l.logMu.Unlock()
	l.unlogged++
	if now := time.Now(); now.Sub(l.lastLog) >= logEvery {
		l.log.Warn("connections refused at the connection cap", "listener", l.name, "refused", l.unlogged,
			"reason", why.Error(), "maxConnections", l.caps.Total, "maxConnectionsPerAddress", l.caps.PerKey)
		l.lastLog, l.unlogged = now, 0
	}
}

func (l *Listener) logAcceptError(err error, delay time.Duration) {
	l.logMu.Lock()
	defer l.logMu.Unlock()
	if now := time.Now(); now.Sub(l.lastAccept) >= logEvery {
		l.log.Error("accept failed; retrying", "listener", l.name, "error", err, "retry", delay)
		l.lastAccept = now
	}
}

// conn gives its hold back when closed (servers close each connection
// they accepted, whatever ends it), and leaves the listener's silent
// connections with its first bytes.
type conn struct {
	net.Conn
	key    string // its remote address's (AddressKey)
	closed atomic.Bool
	l      *Listener
	// said is set once a read returned bytes; elem is c in l.silent
	// until then (guarded by l.silentMu).
	said atomic.Bool
	elem *list.Element
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.said.Load() {
		c.said.Store(true)
		c.l.spoke(c)
	}
	return n, err
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.l.spoke(c) // gone: nothing to evict
	if !c.closed.Swap(true) {
		c.l.count.Release(c.key)
	}
	return err
}
