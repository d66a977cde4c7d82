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

// TestFollowDirSeesEntriesAndOverflow: a directory followed whole is told
// of every entry's event by name, not of its subdirectories' entries, and
// of an overflow by a nameless call.
func TestFollowDirSeesEntriesAndOverflow(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names := make(chan string, 16)
	stop, err := d.FollowDir(dir, func(name string, op fsnotify.Op) {
		if name == "" || op.Has(fsnotify.Create) {
			names <- name
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	next := func() string {
		select {
		case n := <-names:
			return n
		case <-time.After(30 * time.Second): // a liveness bound, not a timing
			t.Fatal("the directory's follower was not called")
			return ""
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "deep.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := next(); n != filepath.Join(dir, "a.jsonl") {
		t.Errorf("first event: %q, want a.jsonl (a subdirectory's entry is not the directory's)", n)
	}
	d.w.Errors <- fsnotify.ErrEventOverflow
	if n := next(); n != "" {
		t.Errorf("after an overflow: %q, want a nameless call", n)
	}
}
