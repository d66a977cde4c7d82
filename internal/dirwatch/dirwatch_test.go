package dirwatch

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TestOverflowTellsEveryFile: when the kernel's event queue overflowed,
// fsnotify.ErrEventOverflow was only logged, so the followers of files
// whose events were lost (a viewer page, a WatchEvents client) missed
// other writers' appends until that file changed again. Every file
// followed is now told once, as written anew. The overflow is injected
// through the watcher's error channel, the way fsnotify reports it: the
// kernel's queue (16384 events) cannot be made to overflow on demand.
func TestOverflowTellsEveryFile(t *testing.T) {
	dir := t.TempDir()
	d, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var mu sync.Mutex
	got := map[string][]fsnotify.Op{}
	calls := make(chan struct{}, 16)
	follow := func(name string) func() {
		stop, err := d.Follow(filepath.Join(dir, name), func(op fsnotify.Op) {
			mu.Lock()
			got[name] = append(got[name], op)
			mu.Unlock()
			calls <- struct{}{}
		})
		if err != nil {
			t.Fatal(err)
		}
		return stop
	}
	follow("a.jsonl")
	follow("b.jsonl")
	stopped := follow("c.jsonl")
	stopped()

	// Another error is only logged.
	d.w.Errors <- errors.New("some other trouble")
	d.w.Errors <- fsnotify.ErrEventOverflow
	for range 2 {
		select {
		case <-calls:
		case <-time.After(30 * time.Second): // a liveness bound, not a timing
			t.Fatal("the followers were not told of the overflow")
		}
	}
	// A real event after it: the watch still works, and nothing else
	// was called meanwhile.
	if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	<-calls
	mu.Lock()
	defer mu.Unlock()
	if len(got["b.jsonl"]) != 1 || got["b.jsonl"][0] != fsnotify.Create {
		t.Errorf("b.jsonl's follower after an overflow: %v, want one Create", got["b.jsonl"])
	}
	if len(got["a.jsonl"]) < 2 || got["a.jsonl"][0] != fsnotify.Create {
		t.Errorf("a.jsonl's follower: %v, want Create (the overflow) then its write", got["a.jsonl"])
	}
	if len(got["c.jsonl"]) != 0 {
		t.Errorf("a follower that stopped was called: %v", got["c.jsonl"])
	}
}
