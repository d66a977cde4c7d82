package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// waitTimeout is generous: it bounds a hung test, it is not a latency
// assertion.
const waitTimeout = 20 * time.Second

func keepYAML(n int) string {
	return fmt.Sprintf("compaction:\n  keepRecentTokens: %d\n", n)
}

// syncBuffer is a log sink the watcher goroutine writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness runs a Watcher on a file in a temporary directory.
type harness struct {
	t       *testing.T
	dir     string
	path    string
	store   *Store
	watcher *Watcher
	results chan Result
	logs    *syncBuffer
}

// startWatcher opens path (which must exist) with opts and runs the
// watcher until the test ends.
func startWatcher(t *testing.T, dir, path string, opts WatcherOptions) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, path: path, results: make(chan Result, 1024), logs: &syncBuffer{}}
	opts.Logger = hclog.New(&hclog.LoggerOptions{Output: h.logs, Level: hclog.Debug})
	opts.Observe = func(r Result) { h.results <- r }
	if opts.LoadOptions == nil {
		opts.LoadOptions = []Option{noEnv}
	}
	store, w, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.store, h.watcher = store, w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h
}

// newHarness writes content to dir/pith.yaml and watches it.
func newHarness(t *testing.T, content string, opts WatcherOptions) *harness {
	t.Helper()
	dir := t.TempDir()
	path := writeFile(t, dir, "pith.yaml", content)
	return startWatcher(t, dir, path, opts)
}

// waitApplied waits until a reload puts keepRecentTokens = want in force.
func (h *harness) waitApplied(want int) Result {
	h.t.Helper()
	return h.waitFor(fmt.Sprintf("keepRecentTokens %d in force", want), func(r Result) bool {
		return r.Applied && r.Change.New.Compaction.KeepRecentTokens == want
	})
}

func (h *harness) waitFor(what string, pred func(Result) bool) Result {
	h.t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case r := <-h.results:
			if pred(r) {
				return r
			}
		case <-timeout:
			h.t.Fatalf("timed out waiting for %s; logs:\n%s", what, h.logs.String())
		}
	}
}

func (h *harness) keep() int { return h.store.Snapshot().Compaction.KeepRecentTokens }

func TestWatcherSavePatterns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		save func(t *testing.T, dir, path, content string)
	}{
		{"write in place", func(t *testing.T, dir, path, content string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(content); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"rename on save (vim)", func(t *testing.T, dir, path, content string) {
			backup := path + "~"
			if err := os.Rename(path, backup); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, filepath.Base(path), content)
			if err := os.Remove(backup); err != nil {
				t.Fatal(err)
			}
		}},
		{"remove then create", func(t *testing.T, dir, path, content string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, filepath.Base(path), content)
		}},
		{"write temp then rename", func(t *testing.T, dir, path, content string) {
			tmp := writeFile(t, dir, ".pith.yaml.tmp123", content)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, keepYAML(1000), WatcherOptions{})
			tc.save(t, h.dir, h.path, keepYAML(2000))
			r := h.waitApplied(2000)
			if r.Change.Old.Compaction.KeepRecentTokens != 1000 || len(r.Change.Keys) != 1 || r.Change.Keys[0] != "compaction.keepRecentTokens" {
				t.Errorf("unexpected change %+v", r.Change)
			}
			if h.keep() != 2000 {
				t.Errorf("store holds %d", h.keep())
			}
			if logs := h.logs.String(); !strings.Contains(logs, "config reloaded") || !strings.Contains(logs, "compaction.keepRecentTokens") {
				t.Errorf("want a 'config reloaded' log naming the key, got:\n%s", logs)
			}
			// And again, to show the watch survived the save.
			tc.save(t, h.dir, h.path, keepYAML(3000))
			h.waitApplied(3000)
		})
	}
}

// TestWatcherConfigMapSwap reproduces the atomic writer of a Kubernetes
// ConfigMap volume: name → ..data/name, ..data → ..<timestamp>, updated by
// writing a new timestamped directory, pointing ..data_tmp at it, renaming
// ..data_tmp over ..data and deleting the old directory.
func TestWatcherConfigMapSwap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	generation := 0
	publish := func(content string) {
		generation++
		ts := fmt.Sprintf("..2026_11_30_09_00_%02d.%d", generation, generation)
		if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, ts), "pith.yaml", content)
		old, _ := os.Readlink(filepath.Join(dir, "..data"))
		if err := os.Symlink(ts, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Skip("symlinks not available:", err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		if old != "" {
			if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(keepYAML(1000))
	path := filepath.Join(dir, "pith.yaml")
	if err := os.Symlink(filepath.Join("..data", "pith.yaml"), path); err != nil {
		t.Fatal(err)
	}
	h := startWatcher(t, dir, path, WatcherOptions{})
	if h.keep() != 1000 {
		t.Fatalf("initial keepRecentTokens %d", h.keep())
	}
	publish(keepYAML(2000))
	h.waitApplied(2000)
	publish(keepYAML(3000))
	h.waitApplied(3000)
}

// TestWatcherSymlinkTarget edits, in place, the file a symlink in another
// directory points at.
func TestWatcherSymlinkTarget(t *testing.T) {
	t.Parallel()
	dir, other := t.TempDir(), t.TempDir()
	target := writeFile(t, other, "real.yaml", keepYAML(1000))
	path := filepath.Join(dir, "pith.yaml")
	if err := os.Symlink(target, path); err != nil {
		t.Skip("symlinks not available:", err)
	}
	h := startWatcher(t, dir, path, WatcherOptions{})
	writeFile(t, other, "real.yaml", keepYAML(2000))
	h.waitApplied(2000)
	// Repointing the link is seen too.
	second := writeFile(t, other, "second.yaml", keepYAML(3000))
	tmp := filepath.Join(dir, ".pith.yaml.new")
	if err := os.Symlink(second, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	h.waitApplied(3000)
	writeFile(t, other, "second.yaml", keepYAML(4000))
	h.waitApplied(4000)
}

// TestWatcherSymlinkSameDir edits, in place, the file a symlink next to it
// points at (pith.yaml → pith.prod.yaml).
func TestWatcherSymlinkSameDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "pith.prod.yaml", keepYAML(1000))
	path := filepath.Join(dir, "pith.yaml")
	if err := os.Symlink("pith.prod.yaml", path); err != nil {
		t.Skip("symlinks not available:", err)
	}
	h := startWatcher(t, dir, path, WatcherOptions{})
	writeFile(t, dir, "pith.prod.yaml", keepYAML(2000))
	h.waitApplied(2000)
	// Switch the link to another file, then edit that one.
	writeFile(t, dir, "pith.staging.yaml", keepYAML(3000))
	tmp := filepath.Join(dir, ".pith.yaml.tmp")
	if err := os.Symlink("pith.staging.yaml", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	h.waitApplied(3000)
	writeFile(t, dir, "pith.staging.yaml", keepYAML(4000))
	h.waitApplied(4000)
	// Editing the old target changes nothing in force.
	writeFile(t, dir, "pith.prod.yaml", keepYAML(5000))
	if err := h.watcher.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.keep() != 4000 {
		t.Errorf("keepRecentTokens %d, want 4000 from the current target", h.keep())
	}
}

func TestWatcherRejectsInvalidAndKeepsOld(t *testing.T) {
	t.Parallel()
	h := newHarness(t, keepYAML(1000), WatcherOptions{})
	before := h.store.Snapshot()
	tests := []struct {
		name, content string
		want          string
	}{
		{"validation", "compaction:\n  reserveTokens: -1\n", "compaction.reserveTokens: must be > 0"},
		{"unknown key", "compaction:\n  keepRecentTokenz: 5\n", "compaction.keepRecentTokenz: unknown key"},
		{"syntax", "compaction: [\n", "syntax error"},
	}
	for _, tc := range tests {
		writeFile(t, h.dir, "pith.yaml", tc.content)
		r := h.waitFor("rejection: "+tc.name, func(r Result) bool { return r.Err != nil })
		if !errors.Is(r.Err, ErrInvalid) || !strings.Contains(r.Err.Error(), tc.want) {
			t.Errorf("%s: want an ErrInvalid naming %q, got %v", tc.name, tc.want, r.Err)
		}
		if h.store.Snapshot() != before {
			t.Fatalf("%s: the configuration in force changed", tc.name)
		}
	}
	if logs := h.logs.String(); !strings.Contains(logs, "config rejected") || !strings.Contains(logs, "reserveTokens: must be > 0") {
		t.Errorf("want a 'config rejected' log with the reason, got:\n%s", logs)
	}
	writeFile(t, h.dir, "pith.yaml", keepYAML(2000))
	h.waitApplied(2000)
}

func TestWatcherRapidWrites(t *testing.T) {
	t.Parallel()
	var applied atomic.Int32
	h := newHarness(t, keepYAML(1000), WatcherOptions{})
	h.store.Subscribe(func(Change) { applied.Add(1) })
	for i := 1; i <= 100; i++ {
		writeFile(t, h.dir, "pith.yaml", keepYAML(1000+i))
	}
	h.waitApplied(1100)
	if h.keep() != 1100 {
		t.Fatalf("final keepRecentTokens %d, want 1100", h.keep())
	}
	if n := applied.Load(); n < 1 || n > 10 {
		t.Errorf("100 rapid writes gave %d reloads, want one or a few", n)
	}
}

func TestWatcherUnchangedContent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, keepYAML(1000), WatcherOptions{})
	// Same configuration, different bytes: loaded, nothing swapped.
	writeFile(t, h.dir, "pith.yaml", "# a comment\n"+keepYAML(1000))
	r := h.waitFor("an unchanged reload", func(r Result) bool { return true })
	if r.Applied || r.Err != nil {
		t.Errorf("want an unchanged result, got %+v", r)
	}
	if h.store.Version() != 1 {
		t.Errorf("version %d, want 1", h.store.Version())
	}
}

func TestWatcherOnReloadVeto(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	h := newHarness(t, keepYAML(1000), WatcherOptions{
		OnReload: func(ctx context.Context, old, next *Config) error {
			calls.Add(1)
			if old.Compaction.KeepRecentTokens != 1000 {
				return fmt.Errorf("unexpected old snapshot %d", old.Compaction.KeepRecentTokens)
			}
			if next.Compaction.KeepRecentTokens == 666 {
				return errors.New("plugin audit failed to start")
			}
			return nil
		},
	})
	writeFile(t, h.dir, "pith.yaml", keepYAML(666))
	r := h.waitFor("the veto", func(r Result) bool { return r.Err != nil })
	if !strings.Contains(r.Err.Error(), "plugin audit failed to start") || h.keep() != 1000 {
		t.Fatalf("veto not honoured: %v, keepRecentTokens %d", r.Err, h.keep())
	}
	if !strings.Contains(h.logs.String(), "config rejected") {
		t.Error("a veto must be logged as a rejection")
	}
	writeFile(t, h.dir, "pith.yaml", keepYAML(777))
	h.waitApplied(777)
	if calls.Load() != 2 {
		t.Errorf("OnReload called %d times, want 2", calls.Load())
	}
}

func TestWatcherManualReloadReadsEnvironment(t *testing.T) {
	t.Parallel()
	var env atomic.Pointer[[]string]
	env.Store(&[]string{})
	h := newHarness(t, keepYAML(1000), WatcherOptions{
		LoadOptions: []Option{WithEnviron(func() []string { return *env.Load() })},
	})
	env.Store(&[]string{"PITH_COMPACTION__KEEPRECENTTOKENS=4242"})
	if err := h.watcher.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.keep() != 4242 {
		t.Fatalf("keepRecentTokens %d after Reload, want 4242", h.keep())
	}
	env.Store(&[]string{"PITH_COMPACTION__KEEPRECENTTOKENS=nope"})
	if err := h.watcher.Reload(context.Background()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a bad override must be rejected, got %v", err)
	}
	if h.keep() != 4242 {
		t.Fatal("a rejected reload changed the configuration")
	}
}

func TestWatcherSIGHUP(t *testing.T) {
	t.Parallel()
	var env atomic.Pointer[[]string]
	env.Store(&[]string{})
	h := newHarness(t, keepYAML(1000), WatcherOptions{
		LoadOptions: []Option{WithEnviron(func() []string { return *env.Load() })},
	})
	stop := h.watcher.ReloadOnSignal(context.Background())
	defer stop()
	env.Store(&[]string{"PITH_COMPACTION__KEEPRECENTTOKENS=5151"})
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Skip("cannot signal self:", err)
	}
	r := h.waitApplied(5151)
	if r.Trigger != TriggerSignal {
		t.Errorf("trigger %q, want signal", r.Trigger)
	}
}

func TestWatcherFileMissingKeepsOld(t *testing.T) {
	t.Parallel()
	h := newHarness(t, keepYAML(1000), WatcherOptions{})
	if err := os.Remove(h.path); err != nil {
		t.Fatal(err)
	}
	r := h.waitFor("the missing file", func(r Result) bool { return r.Err != nil })
	if !errors.Is(r.Err, os.ErrNotExist) || h.keep() != 1000 {
		t.Fatalf("want ErrNotExist and the old configuration, got %v, %d", r.Err, h.keep())
	}
	// Reload on demand reports the missing file too.
	if err := h.watcher.Reload(context.Background()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Reload: want ErrNotExist, got %v", err)
	}
	writeFile(t, h.dir, "pith.yaml", keepYAML(1000))
	// The same content coming back is loaded (the file was gone) and is
	// unchanged; a new value then applies.
	writeFile(t, h.dir, "pith.yaml", keepYAML(2000))
	h.waitApplied(2000)
}

func TestWatcherIgnoresOtherFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, keepYAML(1000), WatcherOptions{})
	writeFile(t, h.dir, "other.yaml", keepYAML(9))
	writeFile(t, h.dir, ".pith.yaml.swp", "x")
	// A relevant change after the noise is the first result.
	writeFile(t, h.dir, "pith.yaml", keepYAML(2000))
	r := h.waitFor("the first result", func(Result) bool { return true })
	if !r.Applied || r.Change.New.Compaction.KeepRecentTokens != 2000 {
		t.Fatalf("first result %+v, want keepRecentTokens 2000 applied", r)
	}
}

func TestWatcherNoStaleKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t, keepYAML(1000)+"retry:\n  maxRetries: 9\n", WatcherOptions{})
	if h.store.Snapshot().Retry.MaxRetries != 9 {
		t.Fatal("initial maxRetries not loaded")
	}
	// Dropping a key from the file brings back its default.
	writeFile(t, h.dir, "pith.yaml", keepYAML(2000))
	r := h.waitApplied(2000)
	if got := r.Change.New.Retry.MaxRetries; got != 3 {
		t.Errorf("maxRetries %d after its key was removed, want the default 3", got)
	}
	if !r.Change.Has("retry.maxRetries") {
		t.Errorf("changed keys %v lack retry.maxRetries", r.Change.Keys)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := Open(filepath.Join(dir, "nope.yaml"), WatcherOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := Open(writeFile(t, dir, "bad.yaml", "compaction: 1\n"), WatcherOptions{LoadOptions: []Option{noEnv}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid file: %v", err)
	}
	if _, _, err := Open(writeFile(t, dir, "c.conf", ""), WatcherOptions{}); !errors.Is(err, ErrUnsupportedFormat) {
		t.Errorf("bad extension: %v", err)
	}
	if _, _, err := Open(filepath.Join(dir, "no-dir", "c.yaml"), WatcherOptions{}); err == nil {
		t.Error("a missing directory must be an error")
	}
	// NewWatcher with an existing store, closed without Run.
	w, err := NewWatcher(writeFile(t, dir, "ok.yaml", ""), NewStore(nil), WatcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Path() != filepath.Join(dir, "ok.yaml") {
		t.Errorf("Path() = %s", w.Path())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal("Close twice:", err)
	}
}
