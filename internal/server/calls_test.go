package server

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"google.golang.org/grpc/codes"
)

// TestCallsInFlightBoundedPerCaller: one caller cannot run more than
// server.maxCallsInFlight calls at once — before the bound, one token ran
// any number of concurrent GetContext/Append/Compact calls (six
// GetContext of a 30 MB session took 432 MB) and starved every other
// tenant. A call past the bound is refused at once as busy (Unavailable
// with a RetryInfo detail; the client here does not retry it);
// another caller is not held back; a slot given back is taken again; and
// a reload changes the bound for the next call.
func TestCallsInFlightBoundedPerCaller(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxCallsInFlight = 3
	cfg.Server.Tokens = []config.Token{
		{Name: "a", SHA256: HashToken("secret-a")},
		{Name: "b", SHA256: HashToken("secret-b")},
	}
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func(tok string) *client.Client {
		c, err := client.Dial(h.addr, client.WithToken(tok), client.WithBusyRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := dial("secret-a"), dial("secret-b")
	sa, err := a.Create(ctx, "a.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Create(ctx, "b.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}

	// Hold a's session's operation lock, as a long compaction does: a's
	// appends wait for it, in flight.
	h.srv.mu.Lock()
	o := h.srv.sessions[sa.ID]
	h.srv.mu.Unlock()
	o.op <- struct{}{}
	locked := true
	defer func() {
		if locked {
			o.release()
		}
	}()
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := sa.AppendMessages(ctx, userMsg("waiting", 10+i))
			errs <- err
		}()
	}
	waitHeld(t, h.srv, "a", 3)

	if _, err := sa.Context(ctx); !errors.Is(err, client.ErrBusy) {
		t.Fatalf("a 4th call of one caller: %v, want ErrBusy", err)
	}
	if _, err := a.Open(ctx, "a.jsonl"); !errors.Is(err, client.ErrBusy) {
		t.Fatalf("a 4th call of one caller (OpenSession): %v, want ErrBusy", err)
	}
	// The viewer's requests count with the gRPC calls (429 there).
	hs := httptestServer(t, h.srv.NewViewer(false))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/s/a.jsonl/api/session", nil)
	req.Header.Set("Authorization", "Bearer secret-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a viewer request past the caller's calls in flight: %d, Retry-After %q; want 429 with a Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Another caller is not held back by the first.
	if _, err := sb.Context(ctx); err != nil {
		t.Fatalf("another caller's call: %v", err)
	}
	if _, err := sb.AppendMessages(ctx, userMsg("b", 10)); err != nil {
		t.Fatalf("another caller's append: %v", err)
	}

	// A reload raising the bound applies to the next call.
	next := *h.srv.Config()
	next.Server.MaxCallsInFlight = 4
	h.srv.ApplyConfig(config.Change{Old: cfg, New: &next})
	if _, err := sa.Context(ctx); err != nil {
		t.Fatalf("after raising server.maxCallsInFlight: %v", err)
	}
	// ... and one lowering it refuses the next call, ending none.
	lower := next
	lower.Server.MaxCallsInFlight = 1
	h.srv.ApplyConfig(config.Change{Old: &next, New: &lower})
	if _, err := sa.Context(ctx); !errors.Is(err, client.ErrBusy) {
		t.Fatalf("after lowering server.maxCallsInFlight: %v, want ErrBusy", err)
	}

	// The calls in flight finish; their slots are given back.
	o.release()
	locked = false
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("a call in flight when the bound was lowered: %v", err)
		}
	}
	waitHeld(t, h.srv, "a", 0)
	if _, err := sa.Context(ctx); err != nil {
		t.Fatalf("after the calls in flight answered: %v", err)
	}
}

// waitHeld waits until the caller name holds n call slots: the calls a
// test started have reached the daemon.
func waitHeld(t *testing.T, s *Server, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.held(name, slotCall) != n {
		if time.Now().After(deadline) {
			t.Fatalf("caller %q holds %d calls in flight, want %d", name, s.held(name, slotCall), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBusyCallsRetried: a call refused because its caller's calls in
// flight were at their bound came back as ResourceExhausted, like a size
// limit that no retry can pass, and the Go client never retried it. It
// is now Unavailable with a RetryInfo detail: the client retries it with
// a back-off, so a call refused while the others run succeeds once one
// answers — appends, Compact and WatchEvents alike — and a retry stops
// when ctx ends. A size limit stays ResourceExhausted.
func TestBusyCallsRetried(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxCallsInFlight = 1
	cfg.Server.Tokens = []config.Token{{Name: "a", SHA256: HashToken("secret-a")}}
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Retries enough for the test's holds, which end on the test's
	// word, not on a clock.
	a, err := client.Dial(h.addr, client.WithToken("secret-a"), client.WithBusyRetries(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sa, err := a.Create(ctx, "a.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	h.srv.mu.Lock()
	o := h.srv.sessions[sa.ID]
	h.srv.mu.Unlock()
	refused := func(method string) float64 {
		return metricValue(t, h.srv.metrics, "pith_rpc_errors_total", "method", method, "code", codes.Unavailable.String())
	}
	// hold runs call while a's one call slot is held by an append
	// waiting for the session's operation lock; once call was refused
	// (as method) at least once, the lock is given back: call must then
	// succeed.
	hold := func(method string, call func() error) {
		t.Helper()
		o.op <- struct{}{}
		blocker := make(chan error, 1)
		go func() {
			_, err := sa.AppendMessages(ctx, userMsg("holding", 10))
			blocker <- err
		}()
		waitHeld(t, h.srv, "a", 1)
		before := refused(method)
		done := make(chan error, 1)
		go func() { done <- call() }()
		for refused(method) == before {
			select {
			case err := <-done:
				o.release()
				t.Fatalf("%s while the caller's one call slot was held: %v, want it refused and retried", method, err)
			case <-time.After(5 * time.Millisecond):
			}
		}
		o.release()
		if err := <-blocker; err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s retried after a busy refusal: %v", method, err)
		}
	}
	hold("GetContext", func() error { _, err := sa.Context(ctx); return err })
	hold("Append", func() error { _, err := sa.AppendMessages(ctx, userMsg("retried", 10)); return err })
	hold("WatchEvents", func() error {
		w, err := sa.Watch(ctx)
		if err == nil {
			w.Close()
		}
		return err
	})
	if _, err := sa.AppendMessages(ctx, assistantMsg("a", 400), userMsg("q", 400), assistantMsg("a2", 400), userMsg("q2", 400)); err != nil {
		t.Fatal(err)
	}
	hold("Compact", func() error { _, err := sa.Compact(ctx, "", nil); return err })

	// A retry stops when ctx ends, with the refusal.
	o.op <- struct{}{}
	go func() { _, _ = sa.AppendMessages(ctx, userMsg("holding", 10)) }()
	waitHeld(t, h.srv, "a", 1)
	cctx, ccancel := context.WithCancel(ctx)
	before := refused("GetContext")
	go func() {
		for refused("GetContext") == before {
			time.Sleep(5 * time.Millisecond)
		}
		ccancel()
	}()
	_, err = sa.Context(cctx)
	o.release()
	if !errors.Is(err, client.ErrBusy) {
		t.Fatalf("a busy call whose ctx ended: %v, want ErrBusy", err)
	}
	// A size limit is final: ResourceExhausted, not retried.
	if _, err := sa.AppendMessages(ctx, userMsg("x", cfg.Server.MaxAppendBytes+1)); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("an append over server.maxAppendBytes: %v, want ResourceExhausted", err)
	}
}
