package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// TestWatchSetupHoldsACallSlot: setting a WatchEvents stream up can read
// and parse a whole session (one closed for idleness), but it took only a
// stream slot, so a caller's server.maxStreams streams opened at once on
// a 30 MB session parsed it that many times over, past
// server.maxCallsInFlight. The setup now holds a call slot, and gives it
// back once the stream waits for events.
func TestWatchSetupHoldsACallSlot(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxCallsInFlight = 2
	cfg.Server.Tokens = []config.Token{{Name: "a", SHA256: HashToken("secret-a")}}
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := client.Dial(h.addr, client.WithToken("secret-a"), client.WithBusyRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sa, err := a.Create(ctx, "a.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	// A stream set up with a call slot free holds none once it waits.
	w, err := sa.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	waitHeld(t, h.srv, "a", 0)

	// Every call slot of a's in use (appends waiting for the operation
	// lock, as behind a long compaction): a's next stream is refused
	// before it reads anything.
	h.srv.mu.Lock()
	o := h.srv.sessions[sa.ID]
	h.srv.mu.Unlock()
	o.op <- struct{}{}
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := sa.AppendMessages(ctx, userMsg("waiting", 10+i))
			errs <- err
		}()
	}
	waitHeld(t, h.srv, "a", 2)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second) // old code: the stream waited for events
	w2, err := sa.Watch(wctx)
	if err == nil {
		_, err = w2.Next()
		w2.Close()
	}
	wcancel()
	o.release()
	if !errors.Is(err, client.ErrBusy) {
		t.Fatalf("a stream set up with every call slot in use: %v, want ErrBusy", err)
	}
	t.Logf("refused: %v", err)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
