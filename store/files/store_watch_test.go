package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pith-dev/pith/store"
)

func nextEvent(t *testing.T, c <-chan store.Event) store.Event {
	t.Helper()
	select {
	case ev := <-c:
		return ev
	case <-time.After(30 * time.Second): // a liveness bound, not a timing
		t.Fatal("no event")
		return store.Event{}
	}
}

// TestWatchResyncsAfterOverflow: the files' watch used to drop the
// kernel's overflow silently, so a watcher never learnt that it missed
// changes. An overflow (told by dirwatch as a nameless event; the
// kernel's queue cannot be made to overflow on demand) is now
// EventResync, then the sessions made meanwhile, created.
func TestWatchResyncsAfterOverflow(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenStore(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := f.watchTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Made where no directory is followed, as when its Create was lost.
	w.mu.Lock()
	w.unfollow(".")
	w.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(dir, "tenant", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tenant", "sub", "a.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	injected := make(chan struct{})
	go func() { defer close(injected); w.event("", 0) }()
	if ev := nextEvent(t, w.out); ev.Kind != store.EventResync {
		t.Fatalf("first event after an overflow: %+v, want resync", ev)
	}
	if ev := nextEvent(t, w.out); ev.Kind != store.EventCreated || ev.Session != "tenant/sub/a.jsonl" {
		t.Fatalf("after the resync: %+v, want tenant/sub/a.jsonl created", ev)
	}
	<-injected
	// The directories found again are followed.
	if err := os.WriteFile(filepath.Join(dir, "tenant", "sub", "b.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w.out); ev.Kind != store.EventCreated || ev.Session != "tenant/sub/b.jsonl" {
		t.Fatalf("a session made after the resync: %+v, want created", ev)
	}
	cancel()
	for range w.out {
	}
}

// TestWatchFollowsARemadeDirectory: a tenant directory removed and made
// again is another inode; its sessions are still seen.
func TestWatchFollowsARemadeDirectory(t *testing.T) {
	dir := t.TempDir()
	tenant := filepath.Join(dir, "tenant")
	if err := os.Mkdir(tenant, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := OpenStore(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := f.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tenant); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tenant, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tenant, "a.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		ev := nextEvent(t, events)
		if ev.Session == "tenant/a.jsonl" && ev.Kind == store.EventCreated {
			break
		}
	}
	cancel()
	for range events {
	}
}
