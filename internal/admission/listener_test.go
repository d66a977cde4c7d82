package admission

import (
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// listen is a real loopback TCP listener bounded by caps, accepting in
// the background; the connections it accepts are held until the test
// ends (as a server holds idle ones).
func listen(t *testing.T, caps Caps) (*Listener, <-chan net.Conn) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(inner, Options{Caps: caps, Name: "test"})
	accepted := make(chan net.Conn, 1024)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for c := range accepted {
			c.Close()
		}
	})
	return l, accepted
}

// dialFrom connects to addr from the loopback address src (all of
// 127.0.0.0/8 is this machine on Linux): a remote address of its own.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		// Refused so fast that the reset came before the dial returned.
		return nil
	}
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// speak sends a byte on client and reads it on served: served has
// spoken, and is no longer evicted at the cap.
func speak(t *testing.T, client, served net.Conn) {
	t.Helper()
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := served.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
}

// closedAtOnce reports whether the daemon side closed c: a read ends
// with EOF or a reset instead of blocking. The deadline only keeps a
// connection that was (wrongly) kept from hanging the test.
func closedAtOnce(t *testing.T, c net.Conn) bool {
	t.Helper()
	if c == nil {
		return true // reset while dialling
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// TestCapsPerKeyAndTotal: one remote address holds PerKey
// connections, the next is closed at once; another address still gets
// in until the listener holds Total; a connection closed gives its place
// back.
func TestCapsPerKeyAndTotal(t *testing.T) {
	l, accepted := listen(t, Caps{Total: 6, PerKey: 4})
	addr := l.Addr().String()
	// Each connection held speaks, so that none is evicted at the cap
	// (TestSilentEvictedAtTotal).
	var served []net.Conn // the daemon's side of each connection held
	for range 4 {
		c := dialFrom(t, "127.0.0.2", addr)
		served = append(served, <-accepted)
		speak(t, c, served[len(served)-1])
	}
	if !closedAtOnce(t, dialFrom(t, "127.0.0.2", addr)) {
		t.Fatal("a 5th connection from one address was kept past maxConnectionsPerKey 4")
	}
	for range 2 {
		c := dialFrom(t, "127.0.0.3", addr)
		served = append(served, <-accepted)
		speak(t, c, served[len(served)-1])
	}
	if !closedAtOnce(t, dialFrom(t, "127.0.0.4", addr)) {
		t.Fatal("a 7th connection was kept past maxConnections 6")
	}
	if got := l.Refused(); got != 2 {
		t.Fatalf("refused %d connections, want 2", got)
	}
	if total, from := l.Held("127.0.0.2"); total != 6 || from != 4 {
		t.Fatalf("holds %d connections, %d from 127.0.0.2; want 6 and 4", total, from)
	}
	// The server closes one of 127.0.0.2's: its place is free again,
	// for that address too.
	served[0].Close()
	dialFrom(t, "127.0.0.2", addr)
	<-accepted
	if got := l.Refused(); got != 2 {
		t.Fatalf("a connection within the caps again was refused (%d refusals)", got)
	}
}

// TestSilentEvictedAtTotal: at the listener's cap a new connection
// takes the place of the oldest one that never sent a byte, so idle
// connections from many addresses cannot lock a client out; connections
// that spoke are never evicted, and past them a new one is refused.
func TestSilentEvictedAtTotal(t *testing.T) {
	l, accepted := listen(t, Caps{Total: 4, PerKey: 2})
	addr := l.Addr().String()
	var silent []net.Conn
	for _, src := range []string{"127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"} {
		silent = append(silent, dialFrom(t, src, addr))
		<-accepted
	}
	// A client that speaks: the oldest silent connection goes.
	talker := dialFrom(t, "127.0.0.4", addr)
	speak(t, talker, <-accepted)
	if !closedAtOnce(t, silent[0]) {
		t.Fatal("the oldest silent connection was kept at the cap")
	}
	if total, _ := l.Held(""); total != 4 {
		t.Fatalf("holds %d connections, want 4", total)
	}
	// A connection its own address's cap refuses makes no room: no
	// silent connection of another address is closed for it.
	before := l.Refused()
	if !closedAtOnce(t, dialFrom(t, "127.0.0.3", addr)) {
		t.Fatal("a 3rd connection from one address was kept past maxConnectionsPerKey 2")
	}
	if total, from := l.Held("127.0.0.3"); l.Refused() != before+1 || total != 4 || from != 2 {
		t.Fatalf("after a refusal by the address's cap: %d refused (want 1), %d held (want 4), %d from 127.0.0.3 (want 2)",
			l.Refused()-before, total, from)
	}
	// The three other silent ones make room in turn; each new one is
	// made to speak, so then none is silent and the next is refused.
	for i := range 3 {
		c := dialFrom(t, "127.0.0.5", addr)
		if i == 2 {
			c = dialFrom(t, "127.0.0.6", addr) // 127.0.0.5 is at its cap
		}
		speak(t, c, <-accepted)
		if !closedAtOnce(t, silent[i+1]) {
			t.Fatalf("silent connection %d was kept at the cap", i+1)
		}
	}
	if !closedAtOnce(t, dialFrom(t, "127.0.0.7", addr)) {
		t.Fatal("a connection past the cap was kept though every held one had spoken")
	}
}

// TestUnixSocketCountsInTotalOnly: a unix socket's peers have no address
// of their own: the listener's total is their only cap.
func TestUnixSocketCountsInTotalOnly(t *testing.T) {
	dir, err := os.MkdirTemp("", "admission")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	inner, err := net.Listen("unix", dir+"/s")
	if err != nil {
		t.Fatal(err)
	}
	l := Listen(inner, Options{Caps: Caps{Total: 3, PerKey: 1}})
	defer l.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 3 {
		c, err := net.Dial("unix", dir+"/s")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		a, err := l.Accept()
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, a)
		speak(t, c, a)
	}
	c, err := net.Dial("unix", dir+"/s")
	if err != nil {
		t.Fatal(err)
	}
	conns = append(conns, c)
	go func() {
		// The 4th is refused inside Accept, which then waits; closing
		// the listener ends it once the refusal was counted.
		for l.Refused() == 0 {
			time.Sleep(time.Millisecond)
		}
		l.Close()
	}()
	if a, err := l.Accept(); err == nil {
		a.Close()
		t.Fatal("a 4th unix connection was accepted past maxConnections 3")
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF && err == nil {
		t.Fatalf("the refused connection reads %v, want its end", err)
	}
}

// countingListener counts the accepts tried on it.
type countingListener struct {
	net.Listener
	tries atomic.Int64
}

func (c *countingListener) Accept() (net.Conn, error) {
	c.tries.Add(1)
	return c.Listener.Accept()
}

// TestAcceptBacksOffOnEMFILE: with the descriptor table full, a pending
// connection makes every accept fail with EMFILE; the listener retries
// after a doubling back-off — a handful of tries, not a busy loop of
// thousands — and accepts the connection once descriptors are free.
func TestAcceptBacksOffOnEMFILE(t *testing.T) {
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Skip(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: inner}
	l := Listen(cl, Options{Caps: Caps{Total: 10}})
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	// Fill the table: a low soft limit, and /dev/null opened until
	// no descriptor is left.
	low := saved
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved)
	var fill []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		fill = append(fill, f)
	}
	start := time.Now()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(got)
			return
		}
		got <- c
	}()
	var early net.Conn
	for early == nil && cl.tries.Load() < 6 {
		select {
		case c, ok := <-got:
			if !ok {
				t.Fatal("Accept gave up on EMFILE instead of retrying")
			}
			early = c
		case <-time.After(time.Millisecond):
		}
	}
	for _, f := range fill {
		f.Close()
	}
	if early != nil {
		// Something else in the process closed a descriptor (a finalizer
		// of an earlier test's file): the table was not full for long.
		early.Close()
		t.Skip("a descriptor was freed while the table was to be full")
	}
	c, ok := <-got
	if !ok {
		t.Fatal("Accept gave up on EMFILE instead of retrying")
	}
	c.Close()
	elapsed := time.Since(start)
	// Doubling from 5 ms: n tries take at least 5·(2^(n-1)-1) ms; a
	// loop without a back-off tries thousands of times meanwhile.
	bound := int64(math.Log2(float64(elapsed)/float64(5*time.Millisecond)+1)) + 3
	if n := cl.tries.Load(); n > bound {
		t.Fatalf("%d accepts tried in %v with the table full: no back-off (at most %d with one)", n, elapsed, bound)
	}
	t.Logf("%d accepts tried in %v with the descriptor table full", cl.tries.Load(), elapsed)
}

func TestKeys(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:80":            "127.0.0.1",
		"[::ffff:10.0.0.1]:80":    "10.0.0.1",
		"[2001:db8:1:2:3::4]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ff::]:443": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:1":        "fe80::/64",
		"@":                       "",
	} {
		if got := RemoteKey(in); got != want {
			t.Errorf("RemoteKey(%q) = %q, want %q", in, got, want)
		}
	}
	if got := AddressKey(&net.UnixAddr{Name: "/s", Net: "unix"}); got != "" {
		t.Errorf("a unix address keys as %q, want none", got)
	}
}

func TestDefaultCaps(t *testing.T) {
	for _, tc := range []struct {
		nofile uint64
		n      int
		want   Caps
	}{
		{20000, 3, Caps{3333, 833}},
		{1024, 2, Caps{256, 64}},
		{1 << 20, 2, Caps{4096, 1024}},
		{40, 3, Caps{16, 4}},
		{0, 1, Caps{4096, 1024}},
	} {
		if got := DefaultCaps(tc.nofile, tc.n); got != tc.want {
			t.Errorf("DefaultCaps(%d, %d) = %+v, want %+v", tc.nofile, tc.n, got, tc.want)
		}
	}
	if got := Resolve(100, 0, 20000, 3); got != (Caps{100, 25}) {
		t.Errorf("Resolve(100, 0) = %+v", got)
	}
	if got := Resolve(0, 10000, 20000, 3); got != (Caps{3333, 3333}) {
		t.Errorf("Resolve(0, 10000) = %+v: the per-address cap must not pass the total", got)
	}
}
