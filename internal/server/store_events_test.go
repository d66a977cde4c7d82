package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/internal/pgtest"
	"google.golang.org/grpc/codes"
)

// TestEventsPublishedWhileStoreDown: engine events a host publishes while
// the database is down reach the other hosts' watchers once it is back,
// in order; and when more were published than the host keeps
// (outboxSize), the other hosts' streams of the session end as streams
// that fell behind, after the kept ones, so their clients know events
// were lost (watch again, read the session). On the old code every event
// published while the store was down was dropped after one failed send,
// reaching only its own host, with nothing telling the others.
func TestEventsPublishedWhileStoreDown(t *testing.T) {
	// A small outbox, so that filling it does not also fill the other
	// host's stream of the session.
	defer func(n int) { outboxSize = n }(outboxSize)
	outboxSize = 8
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	a, b := startStoreHost(t, cfg, url), startStoreHost(t, cfg, url)
	ctx := context.Background()
	const name = "team/events.jsonl"
	if _, err := a.client.Create(ctx, name, "/w"); err != nil {
		t.Fatal(err)
	}
	sb, err := b.client.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w, err := sb.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	src := a.srv.relay

	pgtest.Stop(t)
	restarted := false
	defer func() {
		if !restarted {
			pgtest.Restart(t)
		}
	}()
	// The first event's send fails (the loop then waits to send it
	// again); the ones behind it fill the outbox, and the last few find
	// it full.
	src.publish(name, engine.Event{Kind: engine.EventCompactionEnd, Time: time.Now(), EntryID: "e0000"})
	for deadline := time.Now().Add(time.Minute); src.unsent.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no send was refused by the stopped database")
		}
	}
	n := outboxSize + 4
	for i := 1; i < n; i++ {
		src.publish(name, engine.Event{Kind: engine.EventCompactionEnd, Time: time.Now(), EntryID: fmt.Sprintf("e%04d", i)})
	}
	pgtest.Restart(t)
	restarted = true

	got := 0
	var endErr error
	for {
		ev, err := w.Next()
		if err != nil {
			if !errors.Is(err, client.ErrResourceExhausted) {
				t.Fatalf("after %d events the stream ended with %v, want the fell-behind end (events were lost)", got, err)
			}
			endErr = err
			break
		}
		if ev.Kind != "compaction_end" {
			continue
		}
		if want := fmt.Sprintf("e%04d", got); ev.EntryID != want {
			t.Fatalf("event %d is %s, want %s: in order, none skipped before the lost ones", got, ev.EntryID, want)
		}
		got++
	}
	// The one in flight and the outbox's: the rest were lost, and said so.
	if got != outboxSize+1 {
		t.Fatalf("%d events arrived, want %d (%v)", got, outboxSize+1, endErr)
	}
}

// TestStoredSessionLimitHoldsForOtherHostsAppends: server.maxSessionBytes
// bounds a stored session on a host however it grows — here by another
// host with a larger limit appending: the next call on the small host
// that would read those appends in is refused (ResourceExhausted) rather
// than hold the session past its limit, and the session is not changed.
// On the old code only a whole read (the open) was checked: the call
// succeeded with the session over the limit in memory.
func TestStoredSessionLimitHoldsForOtherHostsAppends(t *testing.T) {
	url := pgtest.NewDatabase(t)
	small := testConfig(t.TempDir())
	small.Server.MaxSessionBytes = 64 << 10
	a, b := startStoreHost(t, small, url), startStoreHost(t, testConfig(t.TempDir()), url)
	ctx := context.Background()
	const name = "team/grows.jsonl"
	sa, err := a.client.Create(ctx, name, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.AppendMessages(ctx, userMsg("small", 50)); err != nil {
		t.Fatal(err)
	}
	sb, err := b.client.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if _, err := sb.AppendMessages(ctx, userMsg(fmt.Sprint("big", i), 2000)); err != nil {
			t.Fatal(err)
		}
	}
	// In the words of a file's refusal (served.OverBound): one check.
	if _, err := sa.Context(ctx); !errors.Is(err, client.ErrResourceExhausted) || !strings.Contains(err.Error(), "bytes, over server.maxSessionBytes (65536)") {
		t.Fatalf("GetContext of a session another host grew past this host's limit: %v, want ResourceExhausted in served.OverBound's words", err)
	}
	if _, err := sa.AppendMessages(ctx, userMsg("more", 10)); !errors.Is(err, client.ErrResourceExhausted) {
		t.Fatalf("Append to it: %v, want ResourceExhausted", err)
	}
	// The larger host goes on.
	if _, err := sb.Context(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClientSendsReadsAgainNotWrites: with the database down, the Go
// client sends a read (GetContext) again by itself until it goes through
// once the database is back, and a write (Append) only once: its answer
// may have been lost after it was stored. On the old code the read came
// back Unavailable at once, as the write does.
func TestClientSendsReadsAgainNotWrites(t *testing.T) {
	url := pgtest.NewDatabase(t)
	h := startStoreHost(t, testConfig(t.TempDir()), url)
	ctx := context.Background()
	c, err := client.Dial(h.addr, client.WithBusyRetries(40)) // about 75 s of retries
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Create(ctx, "team/retry.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("before", 10)); err != nil {
		t.Fatal(err)
	}
	refused := func(method string) float64 {
		return metricValue(t, h.srv.metrics, "pith_rpc_errors_total", "method", method, "code", codes.Unavailable.String())
	}

	pgtest.Stop(t)
	restarted := false
	defer func() {
		if !restarted {
			pgtest.Restart(t)
		}
	}()
	if _, err := s.AppendMessages(ctx, userMsg("while down", 10)); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("append with the database down: %v, want ErrUnavailable", err)
	}
	if n := refused("Append"); n != 1 {
		t.Fatalf("the append was sent %v times, want once", n)
	}
	got := make(chan error, 1)
	go func() {
		_, err := s.Context(ctx)
		got <- err
	}()
	for deadline := time.Now().Add(time.Minute); refused("GetContext") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("GetContext was never refused")
		}
		select {
		case err := <-got:
			t.Fatalf("GetContext returned %v before it was refused", err)
		default:
		}
	}
	pgtest.Restart(t)
	restarted = true
	if err := <-got; err != nil {
		t.Fatalf("GetContext across the outage: %v, want it sent again until it went through", err)
	}
}
