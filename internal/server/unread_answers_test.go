package server

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

// The daemon held any number of answers for a client that never reads
// them: a call's slot of server.maxCallsInFlight was given back when its
// handler returned, while gRPC kept the encoded answer until the client
// read it. A slot now lasts until gRPC has let go of the answer's bytes,
// or the connection ended.

// unreadConn is a gRPC connection whose flow-control windows stay at
// 64 KiB (which also turns off their growth): a call whose answer it does
// not read leaves the rest of that answer queued in the daemon.
func unreadConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// sendUnread sends one GetContext of the session id on conn and reads
// nothing of its answer.
func sendUnread(t *testing.T, ctx context.Context, conn *grpc.ClientConn, id string) grpc.ClientStream {
	t.Helper()
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{StreamName: "GetContext"}, pb.SessionService_GetContext_FullMethodName)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendMsg(&pb.GetContextRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	return cs
}

// busyClient is an anonymous client that does not retry a busy call.
func busyClient(t *testing.T, addr string) *client.Client {
	t.Helper()
	c, err := client.Dial(addr, client.WithBusyRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestUnreadAnswersHoldTheirSlots: with server.maxCallsInFlight = 2, two
// GetContext answers of a 2 MB session that their client does not read
// hold both of its slots: a third call is busy. Reading one answer gives
// its slot back, cancelling the other gives its slot back, and closing a
// connection with unread answers gives all of theirs back.
func TestUnreadAnswersHoldTheirSlots(t *testing.T) {
	h := startServer(t, bigTestConfig(t, 2))
	s := bigSession(t, h, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := busyClient(t, h.addr)
	conn := unreadConn(t, h.addr)

	first := sendUnread(t, ctx, conn, s.ID)
	ctx2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	sendUnread(t, ctx2, conn, s.ID)
	waitHeld(t, h.srv, "", 2)
	if _, err := c.Open(ctx, "big.jsonl"); !errors.Is(err, client.ErrBusy) {
		t.Fatalf("a call while two unread answers wait: %v, want ErrBusy", err)
	}

	var got pb.GetContextResponse
	if err := first.RecvMsg(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) == 0 {
		t.Fatal("the answer read has no messages")
	}
	waitHeld(t, h.srv, "", 1)
	if _, err := c.Open(ctx, "big.jsonl"); err != nil {
		t.Fatalf("a call once an answer was read: %v", err)
	}
	cancel2()
	waitHeld(t, h.srv, "", 0)

	// Closing the connection: its writer exits, and what it queued is
	// never freed — the connection's end gives the slots back.
	other := unreadConn(t, h.addr)
	sendUnread(t, ctx, other, s.ID)
	sendUnread(t, ctx, other, s.ID)
	waitHeld(t, h.srv, "", 2)
	other.Close()
	waitHeld(t, h.srv, "", 0)
	if _, err := c.Open(ctx, "big.jsonl"); err != nil {
		t.Fatalf("a call once the connection of the unread answers closed: %v", err)
	}
}

// TestUnreadAnswersAcrossReopens is the review's loop: OpenSession,
// GetContext (never read), CloseSession, again and again. Each reopen
// parses a fresh buffer of the session and each unread answer referred to
// the one before, so the daemon held a session's worth of bytes per
// cycle (11.9 MB per call of a 12 MB session). Now the unread answers
// hold their slots: past server.maxCallsInFlight of them every call is
// busy, and the loop stops growing the daemon. PITH_HEAVY=1: the review's
// 12 MB session, 20 cycles.
func TestUnreadAnswersAcrossReopens(t *testing.T) {
	const limit = 2
	mb, cycles := 4, 6
	if os.Getenv("PITH_HEAVY") != "" {
		mb, cycles = 12, 20 // the review's session
	}
	h := startServer(t, bigTestConfig(t, limit))
	s := bigSession(t, h, mb)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := busyClient(t, h.addr)
	conn := unreadConn(t, h.addr)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	answered := func() uint64 {
		return uint64(metricValue(t, h.srv.metrics, "pith_rpc_duration_seconds_count", "method", "GetContext"))
	}
	base, before := heapNow(), answered()
	busy := 0
	for range cycles {
		o, err := c.Open(ctx, "big.jsonl")
		if errors.Is(err, client.ErrBusy) {
			busy++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		n := answered()
		sendUnread(t, ctx, conn, o.ID)
		for answered() == n {
			if ctx.Err() != nil {
				t.Fatal("the unread GetContext was never answered")
			}
			time.Sleep(time.Millisecond)
		}
		if err := o.Close(ctx); errors.Is(err, client.ErrBusy) {
			busy++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	var grown uint64
	if now := heapNow(); now > base {
		grown = now - base
	}
	ran := answered() - before
	t.Logf("%d cycles over a %d MB session: %d unread answers, %d calls busy, the heap grew by %.1f MB", cycles, mb, ran, busy, float64(grown)/(1<<20))
	if ran > limit {
		t.Fatalf("%d unread GetContext answers were encoded, past server.maxCallsInFlight = %d", ran, limit)
	}
	if busy == 0 {
		t.Fatal("no call was busy while the unread answers held every slot")
	}
}

// bigTestConfig is bigConfig's configuration with calls server.maxCallsInFlight.
func bigTestConfig(t *testing.T, calls int) *config.Config {
	cfg := testConfig(t.TempDir())
	cfg.Compaction.Enabled = false
	cfg.ContextWindow = 1 << 30
	cfg.Server.MaxCallsInFlight = calls
	return cfg
}

// heapNow is the live heap after two collections (the second empties
// the sync.Pools' victim caches).
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestSmallUnreadAnswersHoldTheirSlots: answers too small to fill any
// window are held too, by a client that grants the daemon no window at
// all (SETTINGS_INITIAL_WINDOW_SIZE 0, a raw HTTP/2 client): two unread
// OpenSession answers hold both slots and every further call is refused
// busy (a trailers-only UNAVAILABLE, which needs no window); closing the
// connection gives the slots back.
func TestSmallUnreadAnswersHoldTheirSlots(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxCallsInFlight = 2
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := h.client.Create(ctx, "small.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	r := dialRawH2(t, h.addr, 0)
	open := &pb.OpenSessionRequest{Path: "small.jsonl"}
	for i := range 12 {
		id := r.call(pb.SessionService_OpenSession_FullMethodName, open, true)
		st := r.answerHeaders(id)
		if i < 2 {
			if st != nil {
				t.Fatalf("unread answer %d: refused with %v", i+1, st)
			}
			continue
		}
		if st == nil {
			t.Fatalf("call %d while two unread answers wait: answered, want busy", i+1)
		}
		if st.Code() != codes.Unavailable {
			t.Fatalf("call %d while two unread answers wait: %v, want UNAVAILABLE (busy)", i+1, st)
		}
	}
	if got := h.srv.held("", slotCall); got != 2 {
		t.Fatalf("%d calls held, want the 2 unread answers", got)
	}
	r.close()
	waitHeld(t, h.srv, "", 0)
}

// TestCallsRefusedBeforeTheirRequest: calls whose request never comes
// each hold their caller's slot from their headers on (tapAuth), so past
// server.maxCallsInFlight the next is refused busy at once, its request
// never read — before, gRPC read every such request whole (up to the
// receive limit each) before any bound applied. A connection also has at
// most server.maxCallsInFlight + server.maxStreams streams open (gRPC's
// default was no bound); one caller meets its slots first.
func TestCallsRefusedBeforeTheirRequest(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxCallsInFlight = 2
	cfg.Server.MaxStreams = 1
	h := startServer(t, cfg)
	r := dialRawH2(t, h.addr, 1<<16)
	var ids []uint32
	for range 5 {
		ids = append(ids, r.call(pb.SessionService_OpenSession_FullMethodName, nil, false))
	}
	refused := r.refusedBeforePing()
	for i, id := range ids {
		st := r.earlyStatus(id)
		if i < 2 {
			if st != nil || refused[id] {
				t.Fatalf("call %d of 5: refused (%v), want it waiting for its request", i+1, st)
			}
			continue
		}
		if st == nil || st.Code() != codes.Unavailable {
			t.Fatalf("call %d of 5 while two wait for their requests: %v, want UNAVAILABLE (busy) at once", i+1, st)
		}
	}
	if got := h.srv.held("", slotCall); got != 2 {
		t.Fatalf("%d calls held, want the 2 waiting", got)
	}
	r.close()
	waitHeld(t, h.srv, "", 0)
}

// TestUnreadStreamMessagesHoldTheirSlot: what a stream sent and its
// client has not read holds the stream's slot past the stream's end, as
// a call's answer does. A WatchEvents stream whose client granted one
// byte of window has an event stuck in the daemon; its session closed,
// the stream ends (NOT_FOUND, queued behind the event) — and with
// server.maxStreams = 1 the caller's next stream is refused until the
// connection closes. Before, the slot was given back as the handler
// returned, and a client could leave any number of streams' last
// messages queued.
func TestUnreadStreamMessagesHoldTheirSlot(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxStreams = 1
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := h.client.Create(ctx, "w.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	r := dialRawH2(t, h.addr, 1)
	watch := r.call(pb.SessionService_WatchEvents_FullMethodName, &pb.WatchEventsRequest{SessionId: s.ID}, true)
	if st := r.answerHeaders(watch); st != nil {
		t.Fatalf("WatchEvents: %v", st)
	}
	if _, err := s.AppendMessages(ctx, userMsg("event", 10)); err != nil {
		t.Fatal(err)
	}
	// The event's first byte arrived: the rest waits in the daemon.
	r.readUntil(func(http2.Frame) bool { return r.data[watch] > 0 })
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The stream's handler has returned (NOT_FOUND) once it is counted.
	ended := func() float64 {
		return metricValue(t, h.srv.metrics, "pith_rpc_errors_total", "method", "WatchEvents", "code", codes.NotFound.String())
	}
	for ended() == 0 {
		if ctx.Err() != nil {
			t.Fatal("the stream of a closed session did not end")
		}
		time.Sleep(time.Millisecond)
	}
	s, err = h.client.Open(ctx, "w.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	again := r.call(pb.SessionService_WatchEvents_FullMethodName, &pb.WatchEventsRequest{SessionId: s.ID}, true)
	if st := r.answerHeaders(again); st == nil || st.Code() != codes.ResourceExhausted {
		t.Fatalf("a second stream while the first one's event waits unread: %v, want RESOURCE_EXHAUSTED (server.maxStreams)", st)
	}
	r.close()
	for deadline := time.Now().Add(30 * time.Second); h.srv.held("", slotStream) != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams held after the connection closed", h.srv.held("", slotStream))
		}
	}
}

// TestSilentClientLosesItsAnswers: a client that stops answering
// altogether (not even the daemon's pings) with answers waiting for it
// loses its connection once a ping goes unanswered, and the answers'
// slots come back — it no longer takes gRPC's two hours.
func TestSilentClientLosesItsAnswers(t *testing.T) {
	oldPing, oldTimeout := connPing, connPingTimeout
	connPing, connPingTimeout = time.Second, 100*time.Millisecond // gRPC's least ping interval is 1 s
	t.Cleanup(func() { connPing, connPingTimeout = oldPing, oldTimeout })
	cfg := testConfig(t.TempDir())
	h := startServer(t, cfg)
	if _, err := h.client.Create(context.Background(), "quiet.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	r := dialRawH2(t, h.addr, 0)
	id := r.call(pb.SessionService_OpenSession_FullMethodName, &pb.OpenSessionRequest{Path: "quiet.jsonl"}, true)
	if st := r.answerHeaders(id); st != nil {
		t.Fatalf("OpenSession: %v", st)
	}
	if got := h.srv.held("", slotCall); got != 1 {
		t.Fatalf("%d calls held, want the unread answer's", got)
	}
	// From here the client reads nothing, pings included.
	waitHeld(t, h.srv, "", 0)
}

// TestUnauthenticatedRefusedAtHeaders: with tokens configured, a call
// without one is refused as its headers arrive, its request never read.
// Before, gRPC read each request whole (up to the receive limit) before
// the token was checked: a client with no token that withheld the last
// byte of 16 requests of 8 MiB made the daemon hold 130 MiB, and more
// with every stream and connection.
func TestUnauthenticatedRefusedAtHeaders(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{{Name: "ops", SHA256: HashToken("ops-token")}}
	h := startServer(t, cfg)
	r := dialRawH2(t, h.addr, 1<<16)
	var ids []uint32
	for range 16 {
		ids = append(ids, r.call(pb.SessionService_Append_FullMethodName, nil, false))
	}
	r.refusedBeforePing()
	for i, id := range ids {
		if st := r.earlyStatus(id); st == nil || st.Code() != codes.Unauthenticated {
			t.Fatalf("call %d without a token, its request not sent: %v, want UNAUTHENTICATED at once", i+1, st)
		}
	}
}
