package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/internal/pgtest"
)

// TestServeWatchSeesOutsideAppends: a WatchEvents client of pith serve
// hears of what other processes append to the session file — the pith
// CLI (pith label, through a Store and its lock) and pi (a line written
// with O_APPEND, no lock) — as entries_appended, the event the daemon's
// own appends produce, without any call of its own reading the session.
// Before, it learnt of them only at its next read.
func TestServeWatchSeesOutsideAppends(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeServeConfig(t, cfgPath, 1200, nil)
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := c.Create(ctx, "team/outside.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sessions", "team", "outside.jsonl")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the session file is not where the test looks: %v", err)
	}
	own, err := s.AppendMessages(ctx, serveMessage("user", "daemon-q", 20))
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	expect := func(who, id string) {
		t.Helper()
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("after %s's append: %v", who, err)
		}
		if ev.Kind != "entries_appended" || ev.EntryID != id {
			t.Fatalf("after %s's append: %s of %q, want entries_appended of %s", who, ev.Kind, ev.EntryID, id)
		}
	}

	if out, err := cliChild("label", path, idOf(t, own[0]), "checkpoint").CombinedOutput(); err != nil {
		t.Fatalf("pith label: %v\n%s", err, out)
	}
	expect("pith label", lastID(t, path))

	pi := child(envPiAppend, path, envPiTag+"=pi", envPiN+"=1")
	if out, err := pi.CombinedOutput(); err != nil {
		t.Fatalf("pi-style append: %v\n%s", err, out)
	}
	expect("pi", lastID(t, path))
}

func idOf(t *testing.T, raw []byte) string {
	t.Helper()
	var e struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e.ID
}

// TestServeWatchSeesRewrites: a WatchEvents client of pith serve hears
// when another program replaces the session's file — a real `pith prune`
// process and its `--restore` — as session_rewritten (the leaf after it):
// entries it read may have changed, so it must read the session again.
// Before, the daemon reopened the file at the next call and its clients
// were told nothing: a prune keeps the number of entries, so not even
// entries_appended came.
func TestServeWatchSeesRewrites(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeServeConfig(t, cfgPath, 1200, nil)
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := c.Create(ctx, "team/rewritten.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sessions", "team", "rewritten.jsonl")
	appendToolOutputs(t, ctx, s)
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	expect := func(who string) {
		t.Helper()
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("after %s: %v", who, err)
		}
		if id := lastID(t, path); ev.Kind != "session_rewritten" || ev.EntryID != id {
			t.Fatalf("after %s: %s of %q, want session_rewritten of %s", who, ev.Kind, ev.EntryID, id)
		}
	}

	before, _ := os.ReadFile(path)
	cfg := emptyConfig(t)
	if out, err := cliChild("prune", path, "--protect", "0", "--minimum", "1", "--protected-tools", "", "--config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("pith prune: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(path); bytes.Equal(before, after) {
		t.Fatal("pith prune changed nothing")
	}
	expect("pith prune")
	if out, err := cliChild("prune", "--restore", path, "--config", cfg).CombinedOutput(); err != nil {
		t.Fatalf("pith prune --restore: %v\n%s", err, out)
	}
	expect("pith prune --restore")
	// The client reads the session again and finds the outputs back.
	cx, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cx.Messages[len(cx.Messages)-1]), "output line") {
		t.Fatal("after the restore the daemon serves the pruned session")
	}
}

// appendToolOutputs appends three turns with large tool outputs, for pith
// prune to replace.
func appendToolOutputs(t *testing.T, ctx context.Context, s *client.Session) {
	t.Helper()
	for i := range 3 {
		call := fmt.Sprintf(`{"role":"assistant","content":[{"type":"toolCall","id":"call-%d","name":"bash","arguments":{"command":"ls"}}],"provider":"test","model":"m1","stopReason":"toolUse","timestamp":%d}`, i, time.Now().UnixMilli())
		result := fmt.Sprintf(`{"role":"toolResult","toolCallId":"call-%d","toolName":"bash","content":[{"type":"text","text":%q}],"isError":false,"timestamp":%d}`, i, strings.Repeat("output line\n", 400), time.Now().UnixMilli())
		if _, err := s.AppendMessages(ctx, serveMessage("user", "q", 10), json.RawMessage(call), json.RawMessage(result)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeWatchSeesStoreRewrites: on a shared PostgreSQL store, a
// `pith prune --store` of a session a pith serve has open and watched is
// announced to its WatchEvents clients as session_rewritten at the next
// call that reads the session (a stored session is not followed between
// calls) — before, the daemon read it whole again and said nothing.
func TestServeWatchSeesStoreRewrites(t *testing.T) {
	if m := pgtest.Missing(); m != "" {
		t.Skip("no PostgreSQL: " + m)
	}
	url := pgtest.NewDatabase(t)
	p := startServe(t, writeStoreConfig(t, url, nil))
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := c.Create(ctx, "team/stored.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	appendToolOutputs(t, ctx, s)
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	events := make(chan client.Event, 16)
	go func() {
		for {
			ev, err := w.Next()
			if err != nil {
				close(events)
				return
			}
			events <- ev
		}
	}()
	out := mustCLI(t, "prune", "--store", url, "team/stored.jsonl", "--protect", "0", "--minimum", "1", "--protected-tools", "", "--json", "--config", emptyConfig(t))
	if !strings.Contains(out, `"pruned":`) || strings.Contains(out, `"pruned":0`) {
		t.Fatalf("prune --store pruned nothing: %s", out)
	}
	// The store tells the daemon of the rewrite on its own schedule: the
	// calls go on until one has read it.
	for {
		cx, err := s.Context(ctx)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if ev.Kind != "session_rewritten" || ev.EntryID == "" {
				t.Fatalf("after pith prune --store: %s of %q, want session_rewritten", ev.Kind, ev.EntryID)
			}
			if strings.Contains(string(cx.Messages[len(cx.Messages)-1]), "output line") {
				t.Fatal("announced the rewrite but served the session from before it")
			}
			return
		case <-ctx.Done():
			t.Fatal("no session_rewritten after pith prune --store")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
