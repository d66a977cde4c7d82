package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatcherRereadsAfterLostEvents: when the kernel drops events (its
// queue overflowed), the file watch tells its followers with a notice of
// no name, and the watcher reloads: the file may have been saved while
// the events were lost. The save here goes through a hard link in another
// directory, which the watched directory hears nothing of, so only the
// notice can bring the change in.
func TestWatcherRereadsAfterLostEvents(t *testing.T) {
	h := newHarness(t, keepYAML(1000), WatcherOptions{Debounce: 20 * time.Millisecond})
	elsewhere := filepath.Join(t.TempDir(), "link.yaml")
	if err := os.Link(h.path, elsewhere); err != nil {
		t.Skipf("no hard link across the two directories: %v", err)
	}
	f, err := os.OpenFile(elsewhere, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(keepYAML(2000)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Nothing was heard: the configuration in force is the old one.
	select {
	case r := <-h.results:
		t.Fatalf("a reload without any event: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	if h.keep() != 1000 {
		t.Fatalf("keepRecentTokens = %d before the notice, want 1000", h.keep())
	}
	h.watcher.event("", 0) // the watch's notice of lost events
	h.waitApplied(2000)
}
