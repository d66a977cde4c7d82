package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
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
