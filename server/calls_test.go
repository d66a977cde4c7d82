package server

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// TestCallsInFlightBoundedPerCaller: one caller cannot run more than
// server.maxCallsInFlight calls at once — before the bound, one token ran
// any number of concurrent GetContext/Append/Compact calls (six
// GetContext of a 30 MB session took 432 MB) and starved every other
// tenant. A call past the bound is refused at once with ResourceExhausted;
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
		c, err := client.Dial(h.addr, client.WithToken(tok))
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

	if _, err := sa.Context(ctx); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("a 4th call of one caller: %v, want ResourceExhausted", err)
	}
	if _, err := a.Open(ctx, "a.jsonl"); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("a 4th call of one caller (OpenSession): %v, want ResourceExhausted", err)
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
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a viewer request past the caller's calls in flight: %d, want 429", resp.StatusCode)
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
	if _, err := sa.Context(ctx); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("after lowering server.maxCallsInFlight: %v, want ResourceExhausted", err)
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
