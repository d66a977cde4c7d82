package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
)

// TestCloseSessionEndsWatchers: CloseSession ends the session's event
// streams. Before, a stream went on open and silent: another client that
// closed the session and opened it again got a new registry entry whose
// events never reached the old stream — the watching agent missed the
// agent_abort of the next Compact and went on with a turn the compaction
// cancelled, with nothing telling it to watch again.
func TestCloseSessionEndsWatchers(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agent, err := h.client.Create(ctx, "w.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	w, err := agent.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := client.Dial(h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	s2, err := other.Open(ctx, "w.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err = other.Open(ctx, "w.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.AppendMessages(ctx, userMsg("q", 400), assistantMsg("a", 400), userMsg("q2", 400), assistantMsg("a2", 400)); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Compact(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	// The old stream either ended (the agent watches again) or got the
	// compaction's events; silence is the break.
	ev, err := w.Next()
	if err == nil {
		t.Logf("event after the close: %s", ev.Kind)
		return
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatal("the stream of a closed session stayed open and silent")
	}
	t.Logf("stream ended: %v", err)
}
