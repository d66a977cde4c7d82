package config

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/dirwatch"
)

// Watcher defaults.
const (
	DefaultDebounce = 150 * time.Millisecond
	DefaultMaxDelay = 2 * time.Second
)

// ErrConcurrentSwap rejects a reload when the Store changed while the new
// configuration was being prepared against the old one.
var ErrConcurrentSwap = errors.New("configuration changed while the reload was being prepared")

// ErrUnsettled postpones a reload: the file changed between the two reads
// that make one (a save in progress). The writes bring another attempt.
var ErrUnsettled = errors.New("the configuration file changed while it was read (a save in progress)")

// Trigger says what started a reload.
type Trigger string

// Triggers.
const (
	TriggerFile   Trigger = "file"
	TriggerSignal Trigger = "signal"
	TriggerManual Trigger = "manual"
)

// Result is the outcome of one reload attempt, for WatcherOptions.Observe.
type Result struct {
	Trigger Trigger
	// Applied is true when a new configuration was swapped in; Change
	// describes it.
	Applied bool
	Change  Change
	// Err is why the file's configuration is not in force: it did not
	// load, did not validate, was vetoed by OnReload, or the file is gone.
	// Nil with Applied false means the file's content changed but the
	// configuration it gives did not.
	Err error
}

// WatcherOptions configures a Watcher. The zero value is usable.
type WatcherOptions struct {
	Logger hclog.Logger
	// Debounce is the quiet time after the last file event before
	// reloading (default 150 ms): editors and Kubernetes save in several
	// steps, and only the end state is worth loading. It is also the time
	// between the two reads that must agree before a reload goes on.
	Debounce time.Duration
	// MaxDelay bounds how long a steady stream of events can postpone a
	// reload (default 2 s).
	MaxDelay time.Duration
	// OnReload is called with the configuration in force and the validated
	// new one before the swap, to prepare for it (start the new plugin
	// set, say). An error rejects the new configuration and the old one
	// stays in force. ctx is Run's (or Reload's) context; neither
	// configuration may be modified.
	OnReload func(ctx context.Context, old, new *Config) error
	// Observe, when set, is told the outcome of every reload attempt
	// (metrics, tests). It runs on the reloading goroutine and must not
	// block.
	Observe func(Result)
	// LoadOptions are passed to every load (WithEnviron, WithoutEnv).
	LoadOptions []Option
}

// Watcher reloads a configuration file into a Store when it changes.
//
// It watches the file's directory rather than the file, so that it follows
// every way of saving: writing in place, rename-on-save (vim), remove then
// create, write-temp-then-rename, and the symlink swap of a Kubernetes
// ConfigMap volume (name → ..data/name, ..data → ..<timestamp>). When the
// file is a symlink into another directory, that directory is watched too.
// Each reload reads the file twice, Debounce apart, and goes on only when
// both reads agree (a save in progress leaves a prefix of the file, which
// often parses); it loads into a fresh koanf instance, validates the whole
// configuration, refuses a file that sets no key (ErrEmpty) and what only a
// restart may change (CheckReload: the roots, the store, the
// authentication in force), asks OnReload, and only then swaps it in;
// anything that fails keeps the configuration in force.
type Watcher struct {
	path, dir, base string
	store           *Store
	opts            WatcherOptions
	log             hclog.Logger
	// watch follows the file's directory (and its symlink target's);
	// its callbacks only note a change on changed, whose one slot makes
	// a burst of events one wake-up, kept until Run takes it.
	watch   *dirwatch.Watch
	changed chan struct{}
	closed  chan struct{}

	// target is where the path's symlinks lead; atomic because the
	// watch's callbacks read it while a reload may be busy. stopTarget
	// stops following target.dir (nil when none is followed).
	target     atomic.Pointer[symlinkTarget]
	stopTarget func()

	mu      sync.Mutex // serializes reloads and guards the fields below
	lastSum [sha256.Size]byte
	haveSum bool
	// unsettled is set while the file keeps changing between the two
	// reads of a reload, so that a long save is logged once.
	unsettled bool
	// betweenReads, when set (tests), is given the first read's content
	// before the second read.
	betweenReads func(first []byte)

	closeOnce sync.Once
	closeErr  error
}

// NewWatcher starts watching path's directory for store. Events are queued
// from now on; Run handles them. Close (or the end of Run) releases the
// watch.
func NewWatcher(path string, store *Store, opts WatcherOptions) (*Watcher, error) {
	w, err := newWatcher(path, opts)
	if err != nil {
		return nil, err
	}
	w.store = store
	return w, nil
}

// openAttempts bounds how many times Open reads a file that keeps
// changing (each attempt is two reads, Debounce apart) before it gives up.
const openAttempts = 10

// Open loads the configuration at path into a new Store and returns a
// Watcher for it. The watch starts before the file is read, so no edit made
// in between is missed. The file is read as a reload reads it: settled
// (two reads Debounce apart agree; a file still changing after
// openAttempts tries is ErrUnsettled) and setting at least one key
// (ErrEmpty) — a process started in the middle of a save would otherwise
// run on a prefix of the file.
func Open(path string, opts WatcherOptions) (*Store, *Watcher, error) {
	w, err := newWatcher(path, opts)
	if err != nil {
		return nil, nil, err
	}
	var data []byte
	for range openAttempts {
		if data, err = w.readSettled(context.Background()); !errors.Is(err, ErrUnsettled) {
			break
		}
	}
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("read configuration: %w", notFound(err))
	}
	cfg, err := Parse(data, w.path, append(append([]Option(nil), opts.LoadOptions...), requireKeys)...)
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	w.lastSum, w.haveSum = sha256.Sum256(data), true
	w.store = NewStore(cfg)
	return w.store, w, nil
}

func newWatcher(path string, opts WatcherOptions) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("watch configuration %s: %w", path, err)
	}
	if _, err := FormatOf(abs); err != nil {
		return nil, err
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	watch, err := dirwatch.New(log.Named("config"))
	if err != nil {
		return nil, fmt.Errorf("watch configuration %s: %w", abs, err)
	}
	w := &Watcher{
		path:    abs,
		dir:     filepath.Dir(abs),
		base:    filepath.Base(abs),
		opts:    opts,
		log:     log.Named("config"),
		watch:   watch,
		changed: make(chan struct{}, 1),
		closed:  make(chan struct{}),
	}
	// Close stops this follow with the watch.
	if _, err := watch.FollowDir(w.dir, w.event); err != nil {
		watch.Close()
		return nil, fmt.Errorf("watch configuration directory %s: %w", w.dir, notFound(err))
	}
	w.mu.Lock()
	w.syncTargetLocked()
	w.mu.Unlock()
	return w, nil
}

// Path is the absolute path of the watched file.
func (w *Watcher) Path() string { return w.path }

// Close stops watching. It is safe to call more than once and alongside Run.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.closeErr = w.watch.Close()
		close(w.closed)
	})
	return w.closeErr
}

// Run handles file events until ctx is done, then closes the watcher; call
// it once. It returns nil on cancellation and an error when the watcher
// was closed under it.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.Close()
	var (
		pending      <-chan time.Time
		timer        *time.Timer
		pendingSince time.Time
	)
	schedule := func() {
		now := time.Now()
		switch {
		case pending == nil:
			pendingSince = now
			timer = time.NewTimer(w.opts.Debounce)
			pending = timer.C
		case now.Sub(pendingSince) < w.opts.MaxDelay:
			timer.Reset(w.opts.Debounce)
		}
		// Past MaxDelay the timer is left to fire, so a file that never
		// stops changing is still picked up.
	}
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-w.closed:
			return fmt.Errorf("watch configuration %s: the watch was closed", w.path)
		case <-w.changed:
			schedule()
		case <-pending:
			pending = nil
			_ = w.reload(ctx, TriggerFile, false)
		}
	}
}

// event is the watch's callback for the directories followed: a change
// that can alter what the path reads as is noted for Run. It runs on the
// watch's goroutine, so it never blocks.
func (w *Watcher) event(name string, _ fsnotify.Op) {
	if name != "" && !w.relevant(name) {
		return
	}
	// name "": the kernel dropped events, and the file may have changed
	// meanwhile; reloading is the safe answer (an unchanged file is
	// recognised by its checksum and left alone).
	select {
	case w.changed <- struct{}{}:
	default: // a change is noted already
	}
}

// relevant filters the directory's events down to those that can change
// what the path reads as.
func (w *Watcher) relevant(name string) bool {
	dir, base := filepath.Dir(name), filepath.Base(name)
	t := w.target.Load()
	if dir == w.dir {
		// "..data", "..data_tmp", "..2026_11_30_…": the ConfigMap swap.
		return base == w.base || strings.HasPrefix(base, "..") || t != nil && base == t.base
	}
	return t != nil && t.dir != "" && dir == t.dir
}

// symlinkTarget is where the watched path leads when it is a symlink.
type symlinkTarget struct {
	dir  string // the target's directory when it is not the path's own (watched too)
	base string // the target's name when it is in the path's own directory
}

// syncTargetLocked follows the path's symlinks, so that an in-place write
// to the file they lead to is seen too: a target in another directory gets
// that directory watched as well.
func (w *Watcher) syncTargetLocked() {
	var want symlinkTarget
	if real, err := filepath.EvalSymlinks(w.path); err == nil && real != w.path {
		d := filepath.Dir(real)
		if realDir, err := filepath.EvalSymlinks(w.dir); err == nil && d == realDir {
			want.base = filepath.Base(real)
		} else {
			want.dir = d
		}
	}
	current := symlinkTarget{}
	if t := w.target.Load(); t != nil {
		current = *t
	}
	if want == current {
		return
	}
	if current.dir != "" && current.dir != want.dir && w.stopTarget != nil {
		// The old target may be gone already (a ConfigMap swap deletes
		// it), which removes its watch by itself.
		w.stopTarget()
		w.stopTarget = nil
	}
	if want.dir != "" && want.dir != current.dir {
		stop, err := w.watch.FollowDir(want.dir, w.event)
		if err != nil {
			w.log.Debug("cannot watch the config symlink target", "dir", want.dir, "error", err)
			want.dir = ""
		}
		w.stopTarget = stop
	}
	w.target.Store(&want)
}

// Reload loads the file now, whether or not it changed, and swaps the result
// in as a file change would. It returns why the new configuration was
// rejected; the configuration in force stays then.
func (w *Watcher) Reload(ctx context.Context) error {
	return w.reload(ctx, TriggerManual, true)
}

// ReloadOnSignal reloads whenever one of sigs arrives (SIGHUP when none are
// given) until ctx is done or stop is called. The signals are caught from
// the moment it returns, so a SIGHUP sent afterwards never falls through to
// the default action (terminating the process). stop waits for the handler
// to finish.
func (w *Watcher) ReloadOnSignal(ctx context.Context, sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGHUP}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				_ = w.reload(ctx, TriggerSignal, true)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func (w *Watcher) reload(ctx context.Context, trigger Trigger, force bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.syncTargetLocked()

	data, err := w.readSettled(ctx)
	switch {
	case err == nil:
		w.unsettled = false
	case ctx.Err() != nil:
		return err // shutting down: nothing to report
	case errors.Is(err, ErrUnsettled):
		// A save in progress: the writes that made the two reads differ
		// are events that bring the next attempt, so nothing polls. Said
		// once per save, however long it takes.
		if !w.unsettled {
			w.unsettled = true
			w.log.Warn("config file is being written; keeping the current configuration until it settles", "path", w.path, "trigger", trigger)
		}
		w.observe(Result{Trigger: trigger, Err: err})
		return err
	case trigger == TriggerFile && errors.Is(err, fs.ErrNotExist):
		// Most likely the middle of a remove-then-create save; the
		// create will bring us back.
		w.haveSum = false
		w.log.Warn("config file missing; keeping the current configuration", "path", w.path)
		w.observe(Result{Trigger: trigger, Err: err})
		return err
	default:
		return w.reject(trigger, fmt.Errorf("read configuration: %w", err))
	}
	sum := sha256.Sum256(data)
	if !force && w.haveSum && sum == w.lastSum {
		return nil // touched, chmod-ed or rewritten with the same bytes
	}
	w.lastSum, w.haveSum = sum, true

	opts := append(append([]Option(nil), w.opts.LoadOptions...), requireKeys)
	next, err := Parse(data, w.path, opts...)
	if err != nil {
		return w.reject(trigger, err)
	}
	old := w.store.Snapshot()
	keys := Diff(old, next)
	if len(keys) == 0 {
		w.log.Debug("config unchanged", "path", w.path, "trigger", trigger)
		w.observe(Result{Trigger: trigger})
		return nil
	}
	// A file cut short by a save that never finished is stable and may
	// parse: what it must not do is move the sessions or drop the
	// authentication under the running callers.
	if err := CheckReload(old, next); err != nil {
		return w.reject(trigger, err)
	}
	if w.opts.OnReload != nil {
		if err := w.opts.OnReload(ctx, old, next); err != nil {
			// Let the next event retry the same content: what failed may
			// be outside the file (a plugin binary, say).
			w.haveSum = false
			return w.reject(trigger, fmt.Errorf("prepare new configuration: %w", err))
		}
	}
	ch, ok := w.store.SwapIf(old, next)
	if !ok {
		w.haveSum = false
		return w.reject(trigger, ErrConcurrentSwap)
	}
	w.log.Info("config reloaded", "path", w.path, "trigger", trigger, "version", ch.Version, "changed", ch.Keys)
	if w.log.IsDebug() {
		before, after := old.flattenMasked(), next.flattenMasked()
		for _, k := range ch.Keys {
			w.log.Debug("config key changed", "key", k, "old", before[k], "new", after[k])
		}
	}
	w.observe(Result{Trigger: trigger, Applied: true, Change: ch})
	return nil
}

// readSettled reads the file twice, Debounce apart, and returns its
// content only when both reads agree: same bytes, same file, same size
// and modification time, and neither changed while it was read. An
// editor that truncates before writing, `cat new > pith.yaml` or a copy
// still running leave a prefix of the file for a while, and a prefix is
// often a valid configuration — every default from the cut on. Anything
// else is ErrUnsettled.
func (w *Watcher) readSettled(ctx context.Context) ([]byte, error) {
	first, err := readSnapshot(w.path)
	if err != nil {
		return nil, err
	}
	if w.betweenReads != nil {
		w.betweenReads(first.data)
	}
	t := time.NewTimer(w.opts.Debounce)
	select {
	case <-ctx.Done():
		t.Stop()
		return nil, ctx.Err()
	case <-t.C:
	}
	second, err := readSnapshot(w.path)
	if err != nil {
		return nil, err
	}
	if !first.same(second) {
		return nil, ErrUnsettled
	}
	return second.data, nil
}

// fileSnapshot is one read of the configuration file.
type fileSnapshot struct {
	data []byte
	info fs.FileInfo
}

// readSnapshot reads path, and refuses a read that a write overlapped
// (the file's size or time changed under it, or it read other than the
// file's size).
func readSnapshot(path string) (fileSnapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileSnapshot{}, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return fileSnapshot{}, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fileSnapshot{}, err
	}
	after, err := f.Stat()
	if err != nil {
		return fileSnapshot{}, err
	}
	if !sameStat(before, after) || after.Mode().IsRegular() && int64(len(data)) != after.Size() {
		return fileSnapshot{}, ErrUnsettled
	}
	return fileSnapshot{data: data, info: after}, nil
}

func (a fileSnapshot) same(b fileSnapshot) bool {
	return bytes.Equal(a.data, b.data) && os.SameFile(a.info, b.info) && sameStat(a.info, b.info)
}

func sameStat(a, b fs.FileInfo) bool {
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func (w *Watcher) reject(trigger Trigger, err error) error {
	w.log.Error("config rejected", "path", w.path, "trigger", trigger, "kept_version", w.store.Version(), "error", err.Error())
	w.observe(Result{Trigger: trigger, Err: err})
	return err
}

func (w *Watcher) observe(r Result) {
	if w.opts.Observe != nil {
		w.opts.Observe(r)
	}
}
