package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/internal/server"
)

// flood holds up to n idle TCP connections to addr from the loopback
// address src (a remote address of its own: all of 127.0.0.0/8 is this
// machine), never sending a byte — no TLS, no HTTP/2 preface, no
// request. A connection the daemon closes is dialled again, at most 50
// a second, as an attacker keeping a daemon down does; at most maxDials
// in all. stop closes everything.
type flood struct {
	held, dials, closedFast atomic.Int64
	stopped                 chan struct{}
	wg                      sync.WaitGroup
	mu                      sync.Mutex
	conns                   map[net.Conn]struct{}
}

func startFlood(t *testing.T, src, addr string, n, maxDials int) *flood {
	f := &flood{stopped: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	slots := make(chan struct{}, n)
	for range n {
		slots <- struct{}{}
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		pace := time.NewTicker(20 * time.Millisecond)
		defer pace.Stop()
		for int(f.dials.Load()) < maxDials {
			select {
			case <-f.stopped:
				return
			case <-slots:
			}
			if f.dials.Load() >= int64(n) {
				// The first n at once; then redials are paced.
				select {
				case <-f.stopped:
					return
				case <-pace.C:
				}
			}
			f.dials.Add(1)
			c, err := d.Dial("tcp", addr)
			if err != nil {
				slots <- struct{}{}
				continue
			}
			f.mu.Lock()
			f.conns[c] = struct{}{}
			f.mu.Unlock()
			f.held.Add(1)
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				start := time.Now()
				// What the daemon sends (gRPC's SETTINGS) is read and
				// dropped until it closes the connection.
				for buf := make([]byte, 512); ; {
					if _, err := c.Read(buf); err != nil {
						break
					}
				}
				if time.Since(start) < time.Second {
					f.closedFast.Add(1)
				}
				f.held.Add(-1)
				f.mu.Lock()
				delete(f.conns, c)
				f.mu.Unlock()
				c.Close()
				slots <- struct{}{}
			}()
		}
	}()
	t.Cleanup(f.stop)
	return f
}

func (f *flood) stop() {
	select {
	case <-f.stopped:
		return
	default:
	}
	close(f.stopped)
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// TestServeSurvivesConnectionFlood: a `pith serve` limited to 1024
// descriptors (soft and hard, so nothing can raise it), with its gRPC
// port and its viewer flooded by 1200 idle connections from one address
// that never send a preface, and 480 more from eight other addresses —
// kept up by dialling again any the daemon closes. Meanwhile an authenticated Append on a fresh connection
// succeeds, a viewer page loads, and the flood's connections past the
// per-address cap are closed at once. Before the connection caps the
// flood took every descriptor (accept4: too many open files): the Append
// waited for an accept that never came, and the viewer answered nothing.
func TestServeSurvivesConnectionFlood(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, map[string]any{
		"sessions": map[string]any{"root": "sessions"},
		"server": map[string]any{
			"shutdownTimeout": "5s",
			"viewer":          "127.0.0.1:0",
			"tokens":          []map[string]any{{"name": "agent", "sha256": server.HashToken("token-a"), "prefix": ""}},
		},
	})
	p := startServeWith(t, serveOptions{ulimit: "-n 1024", viewer: true}, cfgPath)
	vu, err := url.Parse(p.viewer)
	if err != nil {
		t.Fatal(err)
	}
	// The caps derived from 1024 descriptors and two listeners: 256 per
	// listener, 64 per address; 1100 connections to the gRPC port and 100
	// to the viewer's from one address pass the per-address cap and,
	// together, the descriptors.
	grpcFlood := startFlood(t, "127.0.0.2", p.addr, 1100, 3000)
	viewFlood := startFlood(t, "127.0.0.2", vu.Host, 100, 3000)
	// And from eight more addresses, each within its cap of 64 but
	// together past the listener's 256: the oldest silent connection
	// makes room for a new one.
	var spread []*flood
	for i := range 8 {
		spread = append(spread, startFlood(t, fmt.Sprintf("127.0.0.%d", 3+i), p.addr, 60, 600))
	}
	for grpcFlood.dials.Load() < 1100 || viewFlood.dials.Load() < 100 {
		time.Sleep(10 * time.Millisecond)
	}
	for _, f := range spread {
		for f.dials.Load() < 60 {
			time.Sleep(10 * time.Millisecond)
		}
	}

	// The daemon holds the flood's idle connections it took...
	fds := procFDs(t, p.cmd.Process.Pid)
	t.Logf("flood: %d+%d connections held, %d+%d closed at once; the daemon has %d descriptors open",
		grpcFlood.held.Load(), viewFlood.held.Load(), grpcFlood.closedFast.Load(), viewFlood.closedFast.Load(), fds)
	if fds >= 1000 {
		t.Errorf("the flood took %d of the daemon's 1024 descriptors", fds)
	}
	// ...and the calls of a client with credentials go on, on a fresh
	// connection. The deadline only bounds the failure: without the
	// caps no accept comes.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(p.addr, client.WithToken("token-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Create(ctx, "flood/s.jsonl", "/w")
	if err != nil {
		t.Fatalf("an authenticated call during the flood: %v", err)
	}
	if _, err := s.AppendMessages(ctx, serveMessage("user", "still here", 3)); err != nil {
		t.Fatalf("an authenticated Append during the flood: %v", err)
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequest("GET", p.viewer+"s/flood/s.jsonl/api/session", nil)
	req.Header.Set("Authorization", "Bearer token-a")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("a viewer page during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a viewer page during the flood: %s", resp.Status)
	}
	// Past the per-address cap the flood's connections were closed as
	// soon as accepted, on both ports.
	if grpcFlood.closedFast.Load() == 0 || viewFlood.closedFast.Load() == 0 {
		t.Errorf("no flood connection was closed at once (gRPC %d, viewer %d): nothing caps one address",
			grpcFlood.closedFast.Load(), viewFlood.closedFast.Load())
	}
	grpcFlood.stop()
	viewFlood.stop()
	for _, f := range spread {
		f.stop()
	}
}

// TestServeViewerStreamsCapped: live update streams of the viewer past
// the per-address cap (half of the address's connections: 32 of a
// daemon with 1024 descriptors) are refused with 503 and a Retry-After,
// and a page still loads beside them. Before, a caller could hold
// server.maxStreams (256) of them, and anonymous callers together as
// many, each a connection, until none was left for a page.
func TestServeViewerStreamsCapped(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions", "demo.jsonl"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeConfigMap(t, cfgPath, map[string]any{
		"sessions": map[string]any{"root": "sessions"},
		"server":   map[string]any{"shutdownTimeout": "5s", "viewer": "127.0.0.1:0"},
	})
	p := startServeWith(t, serveOptions{ulimit: "-n 1024", viewer: true}, cfgPath)
	streams := openStreams(t, p.viewer+"s/demo.jsonl/api/events", 40)
	if streams.ok != 32 || streams.refused != 8 {
		t.Fatalf("%d streams open, %d refused (%v); want 32 and 8", streams.ok, streams.refused, streams.other)
	}
	if streams.retryAfter == "" {
		t.Error("a refused stream has no Retry-After")
	}
	resp, err := http.Get(p.viewer + "s/demo.jsonl/api/session")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a page beside the streams: %s", resp.Status)
	}
}

type streamsResult struct {
	ok, refused int
	retryAfter  string
	other       []string
}

// openStreams opens n live update streams of u at once and keeps those
// that open until the test ends.
func openStreams(t *testing.T, u string, n int) streamsResult {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: -1}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	var out streamsResult
	for range n {
		resp, err := hc.Get(u)
		if err != nil {
			out.other = append(out.other, err.Error())
			continue
		}
		switch resp.StatusCode {
		case http.StatusOK:
			out.ok++
			t.Cleanup(func() { resp.Body.Close() })
			// The first event says the stream is up.
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				out.other = append(out.other, err.Error())
			}
		case http.StatusServiceUnavailable:
			out.refused++
			out.retryAfter = resp.Header.Get("Retry-After")
			resp.Body.Close()
		default:
			out.other = append(out.other, resp.Status)
			resp.Body.Close()
		}
	}
	return out
}

// TestServeDropsSilentConnections: a connection to the gRPC port that
// never sends the HTTP/2 preface is closed by the daemon after
// server.handshakeTimeout (5 s by default); gRPC's own default kept it
// two minutes. The read's deadline only bounds the failure.
func TestServeDropsSilentConnections(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, map[string]any{
		"sessions": map[string]any{"root": "sessions"},
		"server":   map[string]any{"shutdownTimeout": "5s", "viewer": "127.0.0.1:0"},
	})
	p := startServeWith(t, serveOptions{viewer: true}, cfgPath)
	vu, _ := url.Parse(p.viewer)
	for _, addr := range []string{p.addr, vu.Host} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		// What the daemon sends first (gRPC's SETTINGS) is read and
		// dropped, until the connection ends.
		for buf := make([]byte, 512); err == nil; {
			_, err = c.Read(buf)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: a connection that said nothing is still open after 60 s", addr)
		}
	}
}

// TestServeRaisesDescriptorLimit: a daemon started with a soft limit of
// descriptors below the hard one runs with the hard one. Go's runtime
// does it at start (package syscall, since Go 1.19), to the hard limit
// less one — by which it tells, when starting a child, that nobody
// changed the limit since and gives the child the limit it was started
// with (a plugin using select(2) needs it low) — so Pith has no code of
// its own for it; this holds it to that.
func TestServeRaisesDescriptorLimit(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, map[string]any{"sessions": map[string]any{"root": "sessions"}, "server": map[string]any{"shutdownTimeout": "5s"}})
	p := startServeWith(t, serveOptions{ulimit: "-Sn 512"}, cfgPath)
	soft, hard := procNofile(t, p.cmd.Process.Pid)
	t.Logf("started with a soft limit of 512: soft %d, hard %d", soft, hard)
	if hard <= 513 {
		t.Skipf("the hard limit (%d) leaves nothing to raise", hard)
	}
	if soft != hard && soft != hard-1 {
		t.Fatalf("the daemon's soft limit of descriptors is %d, the hard one %d: not raised", soft, hard)
	}
}

// procNofile reads the soft and hard "Max open files" of pid.
func procNofile(t *testing.T, pid int) (soft, hard uint64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			soft, _ = strconv.ParseUint(f[0], 10, 64)
			hard, _ = strconv.ParseUint(f[1], 10, 64)
			return soft, hard
		}
	}
	t.Fatal("no Max open files in /proc/PID/limits")
	return 0, 0
}
