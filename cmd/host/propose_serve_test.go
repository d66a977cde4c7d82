package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/propose"
	"github.com/pith-dev/pith/internal/server"
)

// TestServePropose: the Propose RPC of a running `pith serve` answers as
// `pith propose` does, with the daemon's warm plugins; it is held to the
// caller's token prefix; it writes nothing; and an edit of the daemon's
// configuration applies to the very next proposal (the plugin's answer
// changes from a compaction to a cancel without a restart).
func TestServePropose(t *testing.T) {
	bin := scripted(t)
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions", "team-a")
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(filepath.Join(sessions, "demo.jsonl"), demo, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "pith.json")
	config := func(mode string) map[string]any {
		return map[string]any{
			"compaction": map[string]any{"keepRecentTokens": 8000},
			"sessions":   map[string]any{"root": "sessions"},
			"server": map[string]any{"shutdownTimeout": "5s", "tokens": []map[string]any{
				{"name": "team-a", "sha256": server.HashToken("token-a"), "prefix": "team-a/"}}},
			"plugins": []map[string]any{{"name": "first", "path": bin, "events": []string{"session_before_compact"},
				"args": []string{"-name", "first", "-before-compact", mode}}},
		}
	}
	writeConfigMap(t, cfgPath, config("compact"))
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr, client.WithToken("token-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	before := dirState(t, sessions)

	result := func() propose.Event {
		t.Helper()
		var progress []json.RawMessage
		raw, err := c.Propose(ctx, "team-a/demo.jsonl", propose.OpCompact, json.RawMessage(`{"reason":"manual"}`),
			func(ev json.RawMessage) { progress = append(progress, ev) })
		if err != nil {
			t.Fatal(err)
		}
		var ev propose.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if len(progress) == 0 {
			t.Error("no progress event")
		}
		return ev
	}
	if ev := result(); ev.Outcome != propose.OutcomeCompacted || ev.Compaction.Summary != "first summary" || ev.Plugin != "first" {
		t.Fatalf("result %+v", ev)
	}
	if _, err := c.Propose(ctx, "team-b/demo.jsonl", propose.OpCompact, nil, nil); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("another tenant's session: %v, want permission denied", err)
	}

	writeConfigMap(t, cfgPath, config("cancel"))
	p.waitLog(t, "config reloaded")
	if ev := result(); ev.Outcome != propose.OutcomeCancelled || ev.By != "first" {
		t.Fatalf("after the reload: %+v", ev)
	}
	if after := dirState(t, sessions); after != before {
		t.Fatal("the session's directory changed")
	}
}

// TestServeProposeCancel: cancelling a Propose call (Escape in pi) while
// the summarizer works stops it: the call ends cancelled, nothing is
// written, and the daemon answers the next call.
func TestServeProposeCancel(t *testing.T) {
	srv, url := startSummaryServer(t, "", true)
	dir := t.TempDir()
	root := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(filepath.Join(root, "demo.jsonl"), demo, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfgPath, map[string]any{
		"compaction": map[string]any{"keepRecentTokens": 8000},
		"summarizer": map[string]any{"provider": "openai", "model": "local-model", "baseUrl": url},
		"sessions":   map[string]any{"root": "sessions"},
		"server":     map[string]any{"shutdownTimeout": "5s"},
	})
	t.Setenv("OPENAI_API_KEY", "sk-test")
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := dirState(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Propose(ctx, "demo.jsonl", propose.OpCompact, nil, nil)
		done <- err
	}()
	<-srv.started
	cancel()
	if err := <-done; err == nil || !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "anceled") {
		t.Fatalf("cancelled call: %v", err)
	}
	// The daemon is free for the next call (a navigation asks no model).
	ids := entryIDs(t, filepath.Join(root, "demo.jsonl"))
	req, _ := json.Marshal(map[string]any{"targetId": ids[2], "oldLeafId": ids[len(ids)-1]})
	if _, err := c.Propose(context.Background(), "demo.jsonl", propose.OpNavigate, req, nil); err != nil {
		t.Fatal(err)
	}
	if after := dirState(t, root); after != before {
		t.Fatal("the session's directory changed")
	}
}
