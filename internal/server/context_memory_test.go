package server

import (
	"context"
	"runtime"
	"testing"
	"time"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestContextAnswersHoldNoCopy: what the daemon holds for a GetContext
// answer its client has not read yet. The answer was encoded into one
// buffer of its whole size (a 30 MB session: 30 MB), held until the last
// byte was sent — and the call's slot of server.maxCallsInFlight is given
// back when the handler returns, before that: a client asking again and
// again without reading made the daemon hold a copy of the context per
// call, without bound. The answer now refers to the session's messages
// (read-only, shared with the engine) instead of copying them.
//
// Four calls whose client reads nothing (its flow-control windows kept at
// 64 KB, so the daemon's sends block), two of them for the LLM-ready
// context, must not grow the daemon's heap by a copy of the session each.
func TestContextAnswersHoldNoCopy(t *testing.T) {
	const mb, calls = 12, 4
	h := bigConfig(t)
	s := bigSession(t, h, mb)
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := func() uint64 {
		return uint64(metricValue(t, h.srv.metrics, "pith_rpc_duration_seconds_count", "method", "GetContext"))
	}
	heap := func() uint64 {
		// Twice: what sync.Pools held goes at the second (their
		// victim caches), not to be taken for memory the calls freed.
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before, base := done(), heap()
	desc := &grpc.StreamDesc{StreamName: "GetContext"}
	for i := range calls {
		cs, err := conn.NewStream(ctx, desc, pb.SessionService_GetContext_FullMethodName)
		if err != nil {
			t.Fatal(err)
		}
		// The raw context and the LLM-ready one (which passes user,
		// assistant and tool messages through as they are).
		if err := cs.SendMsg(&pb.GetContextRequest{SessionId: s.ID, Llm: i%2 == 1}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CloseSend(); err != nil {
			t.Fatal(err)
		}
	}
	// The handlers return, then each answer is encoded and its sending
	// blocks on the client's window; sample the heap a while after.
	for deadline := time.Now().Add(30 * time.Second); done() < before+calls; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d GetContext calls answered", done()-before, calls)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var grown uint64
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		if now := heap(); now > base {
			grown = max(grown, now-base)
		}
	}
	per := grown / calls
	t.Logf("%d unread answers of a %d MB session: the heap grew by %.1f MB (%.2f MB per call)", calls, mb, float64(grown)/(1<<20), float64(per)/(1<<20))
	if per > mb<<20/4 {
		t.Fatalf("each unread answer holds %.1f MB of a %d MB session: a copy of it", float64(per)/(1<<20), mb)
	}
	cancel()
}
