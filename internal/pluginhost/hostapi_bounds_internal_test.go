package pluginhost

import (
	"bytes"
	"context"
	ebin "encoding/binary"
	"encoding/json"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// These tests are a hostile plugin's side of the host API written against
// HTTP/2 frames, doing what no gRPC client does: withholding a request's
// last byte, never opening its flow-control window to read an answer,
// ignoring the server's stream limit. What they check is what the host
// holds in its heap (after a GC), not how long anything takes.

// entriesHost answers ReadEntries with entries and every other call at
// once.
type entriesHost struct{ entries []json.RawMessage }

func (h entriesHost) ReadEntries(context.Context, hooks.ReadEntriesRequest) ([]json.RawMessage, error) {
	return h.entries, nil
}
func (entriesHost) EstimateTokens(_ context.Context, m []json.RawMessage) ([]int, error) {
	return make([]int, len(m)), nil
}
func (entriesHost) Complete(context.Context, hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	return hooks.CompleteResponse{Text: "ok", FinishReason: "stop"}, nil
}
func (entriesHost) Log(context.Context, hclog.Level, string, ...any) error { return nil }

// heapInUse is the host's heap in use after a GC.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// serveTestHostAPI serves host with limits on a private socket.
func serveTestHostAPI(t *testing.T, host hooks.HostAPI, lim hooks.Limits) (*hostAPIServer, *hostAPIEndpoint) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("unix sockets")
	}
	var noBroker atomic.Bool
	noBroker.Store(true)
	api := &hostAPIServer{host: host, grants: &grants{}, log: hclog.NewNullLogger(), relay: newRelayLimit(100, 1<<20), limits: dispatch.LimitsOrDefaults(lim)}
	e, err := serveHostAPI(context.Background(), nil, 0, nil, api, &noBroker, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.srv.Stop)
	return api, e
}

// grant issues a capability as a plugin call does; it returns the token
// the plugin sends back and the revoke of the call's end.
func grant(t *testing.T, api *hostAPIServer, host hooks.HostAPI, lim hooks.Limits) (string, func()) {
	ctx, revoke := api.grants.Grant(context.Background(), host, dispatch.Scope{SessionID: "s", Limits: lim})
	md, _ := metadata.FromOutgoingContext(ctx)
	return md.Get(wire.CapabilityKey)[0], revoke
}

// rawConn is an HTTP/2 connection to the host API, spoken frame by frame.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder
	next uint32
}

func dialRaw(t *testing.T, e *hostAPIEndpoint, settings ...http2.Setting) *rawConn {
	t.Helper()
	conn, err := net.Dial("unix", strings.TrimPrefix(e.address, "unix:"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &rawConn{t: t, conn: conn, fr: http2.NewFramer(conn, conn), next: 1}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.hbuf)
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // a hang fails rather than blocks the run
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	return c
}

// open starts a call to method presenting token; it returns its stream id.
func (c *rawConn) open(method, token string) uint32 {
	c.t.Helper()
	id := c.next
	c.next += 2
	c.hbuf.Reset()
	fields := [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", "host-api"},
		{"content-type", "application/grpc"}, {"te", "trailers"}}
	if token != "" {
		fields = append(fields, [2]string{wire.CapabilityKey, token})
	}
	for _, f := range fields {
		_ = c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true}); err != nil {
		c.t.Fatal(err)
	}
	return id
}

// frame reads the next frame, answering the server's settings and pings.
func (c *rawConn) frame() http2.Frame {
	c.t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.t.Fatal(err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.fr.WriteSettingsAck()
			}
			continue
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = c.fr.WritePing(true, f.Data)
			}
			continue
		case *http2.GoAwayFrame:
			c.t.Fatalf("the host closed the connection: %v", f.ErrCode)
		}
		return f
	}
}

// sendWithheld sends on each stream a request declaring size bytes and
// all of it but the last byte, within the server's flow control, until
// every stream has sent that much or was refused. It returns the streams
// refused (reset or answered before their request was read).
func (c *rawConn) sendWithheld(ids []uint32, size int) (refused int) {
	c.t.Helper()
	connWin := int64(65535)
	win, left := map[uint32]int64{}, map[uint32]int{}
	for _, id := range ids {
		win[id], left[id] = 65535, 5+size-1
	}
	chunk := make([]byte, 16<<10)
	started := map[uint32]bool{}
	for len(left) > 0 {
		sent := false
		for id, n := range left {
			k := min(int64(min(n, len(chunk))), win[id], connWin)
			if k <= 0 || !started[id] && k < 5 { // the length prefix goes whole
				continue
			}
			b := chunk[:k]
			if !started[id] {
				b = make([]byte, k)
				ebin.BigEndian.PutUint32(b[1:], uint32(size))
				started[id] = true
			}
			if err := c.fr.WriteData(id, false, b); err != nil {
				c.t.Fatal(err)
			}
			left[id] -= int(k)
			win[id] -= k
			connWin -= k
			sent = true
			if left[id] == 0 {
				delete(left, id)
			}
		}
		if sent {
			continue
		}
		switch f := c.frame().(type) {
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				connWin += int64(f.Increment)
			} else {
				win[f.StreamID] += int64(f.Increment)
			}
		case *http2.RSTStreamFrame:
			if _, ok := left[f.StreamID]; ok {
				delete(left, f.StreamID)
				refused++
			}
		case *http2.MetaHeadersFrame:
			if _, ok := left[f.StreamID]; ok && f.StreamEnded() {
				delete(left, f.StreamID)
				refused++
			}
		}
	}
	return refused
}

// TestHostAPIReadsNoRequestOfNoCall: a plugin with no call in progress
// opens 16 Complete calls and sends each an 8 MiB request but its last
// byte. The host refuses each call from its headers, before reading its
// request: its heap does not grow by the requests (it grew by 130 MiB
// when the capability was checked after gRPC had read them).
func TestHostAPIReadsNoRequestOfNoCall(t *testing.T) {
	_, e := serveTestHostAPI(t, entriesHost{}, hooks.Limits{})
	before := heapInUse()
	c := dialRaw(t, e)
	const calls, size = 16, 8 << 20
	ids := make([]uint32, calls)
	for i := range ids {
		ids[i] = c.open(pb.HostAPI_Complete_FullMethodName, "")
	}
	refused := c.sendWithheld(ids, size)
	grew := int64(heapInUse()) - int64(before)
	t.Logf("no call in progress: %d calls of %d MiB, %d refused; host heap grew %d MiB", calls, size>>20, refused, grew>>20)
	if refused != calls {
		t.Errorf("%d of %d calls without a capability were read, want none", calls-refused, calls)
	}
	if grew > 16<<20 {
		t.Errorf("the host's heap grew by %d MiB holding requests no call grants", grew>>20)
	}
}

// TestHostAPIReadsRequestsWithinHostCallsInFlight: within a call in
// progress, a plugin opens 16 Complete calls of 8 MiB withholding each
// one's last byte. The host reads at most limits.hostCallsInFlight of
// them and refuses the others from their headers; when the plugin call
// ends, the requests still being read are dropped.
func TestHostAPIReadsRequestsWithinHostCallsInFlight(t *testing.T) {
	var host entriesHost
	lim := hooks.Limits{CompletePromptBytes: 8 << 20}
	api, e := serveTestHostAPI(t, host, lim)
	token, revoke := grant(t, api, host, lim)
	before := heapInUse()
	c := dialRaw(t, e)
	const calls, size = 16, 8 << 20
	ids := make([]uint32, calls)
	for i := range ids {
		ids[i] = c.open(pb.HostAPI_Complete_FullMethodName, token)
	}
	refused := c.sendWithheld(ids, size)
	grew := int64(heapInUse()) - int64(before)
	inFlight := dispatch.DefaultLimits().HostCallsInFlight
	t.Logf("in a call: %d calls of %d MiB, %d refused; host heap grew %d MiB", calls, size>>20, refused, grew>>20)
	if read := calls - refused; read > inFlight {
		t.Errorf("the host read %d requests of one plugin call at once, want at most limits.hostCallsInFlight (%d)", read, inFlight)
	}
	if limit := int64(inFlight*size + 24<<20); grew > limit {
		t.Errorf("the host's heap grew by %d MiB, want at most %d MiB", grew>>20, limit>>20)
	}
	revoke()
	// The reads end with the call: each stream is reset.
	for done := 0; done < calls-refused; {
		if f, ok := c.frame().(*http2.RSTStreamFrame); ok && f.StreamID != 0 {
			done++
		}
	}
	t.Logf("after the call ended: host heap %d MiB above the start", (int64(heapInUse())-int64(before))>>20)
}

// TestHostAPILogRequestsCounted: Log calls are admitted like the others.
// A Log request may be as large as any (maxHostRequest), and uncounted a
// plugin kept any number of them half-sent, past its call's end (the
// review: 16 of 8 MiB, +129 MiB after the call ended).
func TestHostAPILogRequestsCounted(t *testing.T) {
	var host entriesHost
	lim := hooks.Limits{CompletePromptBytes: 8 << 20}
	api, e := serveTestHostAPI(t, host, lim)
	token, revoke := grant(t, api, host, lim)
	c := dialRaw(t, e)
	const calls, size = 16, 8 << 20
	ids := make([]uint32, calls)
	for i := range ids {
		ids[i] = c.open(pb.HostAPI_Log_FullMethodName, token)
	}
	refused := c.sendWithheld(ids, size)
	revoke()
	if inFlight := dispatch.DefaultLimits().HostCallsInFlight; calls-refused > inFlight {
		t.Errorf("the host read %d Log requests of one plugin call at once, want at most limits.hostCallsInFlight (%d)", calls-refused, inFlight)
	}
}

// TestHostAPIConnections: a plugin opens 8 connections to its host API at
// once. The host serves at most hostAPIConns of them at a time; the others
// wait unserved (in the listener's backlog) until one closes.
func TestHostAPIConnections(t *testing.T) {
	_, e := serveTestHostAPI(t, entriesHost{}, hooks.Limits{})
	var served atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		c := dialRaw(t, e)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A served connection gets the server's settings at once.
			_ = c.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			if f, err := c.fr.ReadFrame(); err == nil {
				if _, ok := f.(*http2.SettingsFrame); ok {
					served.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := served.Load(); n > hostAPIConns {
		t.Errorf("the host served %d connections of one plugin at once, want at most %d", n, hostAPIConns)
	}
	if n := e.accepted.Load(); n > hostAPIConns {
		t.Errorf("the host accepted %d connections of one plugin at once, want at most %d", n, hostAPIConns)
	}
}

// TestHostAPIUnreadAnswersAcrossCalls: over 10 plugin calls, a plugin asks
// ReadEntries 4 times in each (within limits.hostCallsInFlight) on a
// connection whose flow-control window it never opens, so that it reads
// none of the 2 MiB answers. gRPC keeps an answer until it is read: the
// host refuses the connection's calls once its unread answers reach
// answerBudget (hostCallsInFlight × pathEntriesBytes, 16 MiB here), so it
// holds at most that and the answers of one call more (it held all 40 when
// a call's end freed its place).
func TestHostAPIUnreadAnswersAcrossCalls(t *testing.T) {
	entry := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	host := entriesHost{entries: []json.RawMessage{entry, entry}}
	lim := hooks.Limits{PathEntriesBytes: 4 << 20}
	api, e := serveTestHostAPI(t, host, lim)
	req, _ := proto.Marshal(&pb.ReadEntriesRequest{SessionId: "s"})
	msg := ebin.BigEndian.AppendUint32([]byte{0}, uint32(len(req)))
	msg = append(msg, req...)
	before := heapInUse()
	c := dialRaw(t, e, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	const calls, perCall, answerSize = 10, 4, 2 << 20
	answers, refused := 0, 0
	for range calls {
		token, revoke := grant(t, api, host, lim)
		for range perCall {
			id := c.open(pb.HostAPI_ReadEntries_FullMethodName, token)
			if err := c.fr.WriteData(id, true, msg); err != nil {
				t.Fatal(err)
			}
		}
		// Each call is answered (its answer's headers: the handler has
		// returned), or refused.
		for n := 0; n < perCall; {
			switch f := c.frame().(type) {
			case *http2.MetaHeadersFrame:
				if f.StreamEnded() {
					refused++
				} else {
					answers++
				}
				n++
			case *http2.RSTStreamFrame:
				refused++
				n++
			}
		}
		revoke()
	}
	grew := int64(heapInUse()) - int64(before)
	budget := answerBudget(api.limits)
	most := int(budget)/answerSize + perCall
	t.Logf("%d ReadEntries of 2 MiB left unread over %d calls: %d answered, %d refused; host heap grew %d MiB", calls*perCall, calls, answers, refused, grew>>20)
	if answers > most {
		t.Errorf("the host made %d answers the plugin left unread, want at most %d (answerBudget and one call's)", answers, most)
	}
	if limit := int64(most*answerSize + 16<<20); grew > limit {
		t.Errorf("the host's heap grew by %d MiB, want at most %d MiB", grew>>20, limit>>20)
	}
}

// TestHostAPIReadAnswersFreeTheBudget: a connection's count of unread
// answers falls back as they are read, so a plugin reading its answers is
// never refused: 40 ReadEntries of 2 MiB, 4 at a time, read whole, over a
// budget of 16 MiB.
func TestHostAPIReadAnswersFreeTheBudget(t *testing.T) {
	entry := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	host := entriesHost{entries: []json.RawMessage{entry, entry}}
	lim := hooks.Limits{PathEntriesBytes: 4 << 20}
	api, e := serveTestHostAPI(t, host, lim)
	req, _ := proto.Marshal(&pb.ReadEntriesRequest{SessionId: "s"})
	msg := ebin.BigEndian.AppendUint32([]byte{0}, uint32(len(req)))
	msg = append(msg, req...)
	c := dialRaw(t, e)
	token, revoke := grant(t, api, host, lim)
	defer revoke()
	for range 10 {
		for range 4 {
			id := c.open(pb.HostAPI_ReadEntries_FullMethodName, token)
			if err := c.fr.WriteData(id, true, msg); err != nil {
				t.Fatal(err)
			}
		}
		for ended := 0; ended < 4; {
			switch f := c.frame().(type) {
			case *http2.DataFrame:
				if n := len(f.Data()); n > 0 {
					_ = c.fr.WriteWindowUpdate(0, uint32(n))
					_ = c.fr.WriteWindowUpdate(f.StreamID, uint32(n))
				}
			case *http2.MetaHeadersFrame:
				if f.StreamEnded() {
					for _, hf := range f.Fields {
						if hf.Name == "grpc-status" && hf.Value != "0" {
							t.Fatalf("a call of a plugin reading its answers was refused: %v", f.Fields)
						}
					}
					ended++
				}
			case *http2.RSTStreamFrame:
				t.Fatalf("stream %d reset: %v", f.StreamID, f.ErrCode)
			}
		}
	}
}

// TestHostAPIRefusesARequestOverItsLimits: within a call in progress, a
// Complete request declaring more than the largest a plugin within its
// limits sends (max(completePromptBytes, estimateBytes) and its envelope)
// is refused from its length prefix with RESOURCE_EXHAUSTED: the host
// reads none of it (it took up to 256 MiB).
func TestHostAPIRefusesARequestOverItsLimits(t *testing.T) {
	var host entriesHost
	lim := hooks.Limits{CompletePromptBytes: 1 << 20, EstimateBytes: 1 << 20}
	api, e := serveTestHostAPI(t, host, lim)
	token, revoke := grant(t, api, host, lim)
	defer revoke()
	c := dialRaw(t, e)
	id := c.open(pb.HostAPI_Complete_FullMethodName, token)
	declared := maxHostRequest(api.limits) + 1
	prefix := ebin.BigEndian.AppendUint32([]byte{0}, uint32(declared))
	if err := c.fr.WriteData(id, false, append(prefix, make([]byte, 1<<10)...)); err != nil {
		t.Fatal(err)
	}
	for {
		f, ok := c.frame().(*http2.MetaHeadersFrame)
		if !ok || f.StreamID != id || !f.StreamEnded() {
			continue
		}
		for _, hf := range f.Fields {
			if hf.Name == "grpc-status" && hf.Value != "8" {
				t.Fatalf("a request of %d bytes ended with %v, want RESOURCE_EXHAUSTED (8)", declared, f.Fields)
			}
		}
		return
	}
}

// TestHostAPIRefusesHugeHeaders: a call whose headers pass
// hostAPIHeaderBytes (here a 1 MiB field beside the capability) is reset
// from its headers rather than kept with them while it runs.
func TestHostAPIRefusesHugeHeaders(t *testing.T) {
	var host entriesHost
	api, e := serveTestHostAPI(t, host, hooks.Limits{})
	token, revoke := grant(t, api, host, hooks.Limits{})
	defer revoke()
	c := dialRaw(t, e)
	_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // a served call answers nothing: it waits for its request
	c.hbuf.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", pb.HostAPI_Complete_FullMethodName}, {":authority", "host-api"},
		{"content-type", "application/grpc"}, {"te", "trailers"}, {wire.CapabilityKey, token}, {"x-padding", strings.Repeat("p", 1<<20)}} {
		_ = c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	// One HEADERS frame and CONTINUATIONs of 16 KiB each.
	block := c.hbuf.Bytes()
	first := block[:16<<10]
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first}); err != nil {
		t.Fatal(err)
	}
	for rest := block[16<<10:]; len(rest) > 0; {
		n := min(len(rest), 16<<10)
		if err := c.fr.WriteContinuation(1, n == len(rest), rest[:n]); err != nil {
			return // the host closed the connection: refusing it bounds it too
		}
		rest = rest[n:]
	}
	for {
		f, err := c.fr.ReadFrame()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("a call with 1 MiB of headers is still open")
		}
		if err != nil {
			return // closed by the host
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			return
		case *http2.GoAwayFrame:
			return // refusing the whole connection bounds it too
		case *http2.MetaHeadersFrame:
			for _, hf := range f.Fields {
				if hf.Name == "grpc-status" && hf.Value == "0" {
					t.Fatal("a call with 1 MiB of headers was served")
				}
			}
			if f.StreamEnded() {
				return
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.fr.WriteSettingsAck()
			}
		}
	}
}
