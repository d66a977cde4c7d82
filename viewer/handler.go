package viewer

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/dirwatch"
	"github.com/pith-dev/pith/store/files"
)

//go:embed assets
var assetFS embed.FS

// Settings are the compaction settings the context view draws: the model's
// window, the reserve kept free for the answer, and whether automatic
// compaction is on (no threshold line without it).
type Settings struct {
	ContextWindow  int  `json:"contextWindow"`
	ReserveTokens  int  `json:"reserveTokens"`
	AutoCompaction bool `json:"autoCompaction"`
}

// Options configure a Handler.
type Options struct {
	// Path is the session file to show. Its directory is watched. Empty
	// for a session that is not a file here (a shared store): then
	// nothing is watched and the caller tells the handler of changes
	// (Refresh, Reload).
	Path string
	// Name is shown in the page instead of Path: required when Path is
	// empty, and a daemon's name for the session (relative to its root)
	// so that its clients never read the server's paths.
	Name string
	// Tail reads the session, whole and then what was appended (see
	// Tail); nil reads Path through FileTail. A daemon passes one that
	// reads through its confined root, or from its store.
	Tail Tail
	// OpenArchive opens the prune archive, where pruned outputs are kept;
	// nil opens the archive next to Path.
	OpenArchive func() (io.ReadCloser, error)
	Settings    Settings
	Logger      hclog.Logger
	// Debounce is how long the handler waits after a change of the file
	// before it reads it, so a burst of appends costs one reading.
	// Zero means 50 ms.
	Debounce time.Duration
	// SettingsFunc, when set, is asked for the settings on every request
	// instead of Settings (a daemon whose configuration reloads).
	SettingsFunc func() Settings
	// AllowHost checks the Host header of every request; nil allows only
	// names that are loopback by definition: IP addresses and localhost.
	// A daemon that serves a real host name behind its own authentication
	// passes its own check.
	AllowHost func(host string) bool

	// Streams bound the live update streams (StreamCaps).
	Streams StreamCaps

	// follow is the file watch a Sessions shares among its sessions; nil:
	// the handler has one of its own.
	follow FollowFunc
	// streams is the gate a Sessions shares among its sessions; nil:
	// the handler's own, from Streams.
	streams *streamGate
	// sized, when set, is told the session's size after every reading
	// that changed it (a Sessions keeps its byte budget with it).
	sized func(int64)
}

// Handler serves the viewer of one session file. It is an http.Handler:
// mount it at any prefix with http.StripPrefix. Close it to stop watching.
type Handler struct {
	path         string
	shown        string // the session's name in the page
	watched      bool
	tail         Tail
	openArchive  func() (io.ReadCloser, error)
	settings     Settings
	settingsFunc func() Settings
	allowHost    func(string) bool
	log          hclog.Logger
	debounce     time.Duration
	mux          *http.ServeMux

	snap     atomic.Pointer[snapshot]
	size     atomic.Int64 // the bytes of the last reading (Size)
	sized    func(int64)
	reloadMu sync.Mutex // one reload at a time
	version  int64      // guarded by reloadMu
	last     reading    // guarded by reloadMu

	// unwatch stops following the file; ownWatch is the watch the
	// handler made for itself (nil when it shares its Sessions').
	unwatch  func()
	ownWatch *dirwatch.Watch

	timerMu sync.Mutex
	timer   *time.Timer
	wait    time.Duration // the debounce after the last reload's cost
	full    bool          // the pending reading must read the whole session

	subsMu sync.Mutex
	subs   map[chan struct{}]struct{}
	// streams bounds the open streams (StreamCaps); nil: unbounded.
	streams *streamGate

	done      chan struct{}
	closeOnce sync.Once
}

// New reads the session file and starts watching it.
func New(opts Options) (*Handler, error) {
	path, watched := opts.Name, opts.Path != ""
	if watched {
		abs, err := filepath.Abs(opts.Path)
		if err != nil {
			return nil, err
		}
		path = abs
	}
	h := &Handler{
		path:         path,
		shown:        cmp.Or(opts.Name, path),
		watched:      watched,
		tail:         opts.Tail,
		openArchive:  opts.OpenArchive,
		settings:     opts.Settings,
		settingsFunc: opts.SettingsFunc,
		allowHost:    opts.AllowHost,
		log:          opts.Logger,
		debounce:     opts.Debounce,
		sized:        opts.sized,
		subs:         map[chan struct{}]struct{}{},
		done:         make(chan struct{}),
		streams:      opts.streams,
	}
	if h.streams == nil {
		h.streams = opts.Streams.gate()
	}
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	if h.tail == nil {
		if !watched {
			return nil, fmt.Errorf("viewer: a session with no path needs a Tail")
		}
		h.tail = FileTail(func() (*os.File, error) { return OpenRegular(path) }, nil)
	}
	if h.openArchive == nil {
		h.openArchive = func() (io.ReadCloser, error) { return files.OpenReadOnly(compaction.ArchivePath(path)) }
	}
	if h.debounce <= 0 {
		h.debounce = 50 * time.Millisecond
	}
	if err := h.reload(true); err != nil {
		if opts.Path != "" && errors.Is(err, session.ErrNotSession) {
			// The file's own fault: say which file, as the user named it.
			return nil, fmt.Errorf("viewer: %s: %w", opts.Path, errors.Unwrap(err))
		}
		return nil, err
	}
	h.mux = h.routes()
	if !watched {
		return h, nil
	}
	// The directory is watched, not the file (see dirwatch).
	follow := opts.follow
	if follow == nil {
		dw, err := dirwatch.New(h.log)
		if err != nil {
			return nil, fmt.Errorf("viewer: watch %s: %w", path, err)
		}
		h.ownWatch, follow = dw, dw.Follow
	}
	unwatch, err := follow(path, h.changed)
	if err != nil {
		if h.ownWatch != nil {
			h.ownWatch.Close()
		}
		return nil, fmt.Errorf("viewer: watch %s: %w", path, err)
	}
	h.unwatch = unwatch
	return h, nil
}

// Close stops watching the file and ends every live event stream.
func (h *Handler) Close() error {
	var err error
	h.closeOnce.Do(func() {
		close(h.done)
		if h.unwatch != nil {
			h.unwatch()
		}
		if h.ownWatch != nil {
			err = h.ownWatch.Close()
		}
		h.timerMu.Lock()
		if h.timer != nil {
			h.timer.Stop()
		}
		h.timerMu.Unlock()
	})
	return err
}

// currentSettings are the settings in force for this request.
func (h *Handler) currentSettings() Settings {
	if h.settingsFunc != nil {
		return h.settingsFunc()
	}
	return h.settings
}

// Size is the bytes of the session the handler holds, as last read (its
// complete lines). The memory it takes is a multiple of it: about 2.5
// times (BenchmarkOpenSessionMemory).
func (h *Handler) Size() int64 { return h.size.Load() }

// Version counts the readings of the file; it grows by one for every
// reload the page is told about.
func (h *Handler) Version() int64 { return h.snap.Load().version }

// reload reads the session: whole when full (or when the lines read
// last are no longer its start), else only the lines appended. A reading
// that found nothing new tells the page nothing.
func (h *Handler) reload(full bool) error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	var next reading
	var err error
	changed, ok := true, false
	if !full {
		next, changed, ok, err = readAppended(h.tail, h.last)
	}
	if err == nil && !ok {
		next, err = readWhole(h.tail)
		changed = true
	}
	if err != nil {
		return fmt.Errorf("viewer: %w", err)
	}
	h.last = next
	if old := h.size.Swap(next.size); old != next.size && h.sized != nil {
		h.sized(next.size)
	}
	if !changed {
		return nil
	}
	h.version++
	var snap *snapshot
	if ok { // an appended reading: extend the last snapshot when it can
		if prev := h.snap.Load(); prev != nil {
			snap = prev.extend(next.file, h.version)
		}
	}
	if snap == nil {
		snap = newSnapshot(next.file, h.version)
	}
	h.snap.Store(snap)
	h.notify()
	return nil
}

// changed is the file watch's news of the session file.
func (h *Handler) changed(op fsnotify.Op) {
	switch {
	case op&(fsnotify.Create|fsnotify.Rename) != 0:
		h.schedule(true) // another file under the name: read it whole
	case op&fsnotify.Write != 0:
		h.schedule(false)
	}
}

// Refresh reads what was appended to the session soon, as a write seen
// on disk does: a daemon calls it for what its engine reports (a
// compaction, a navigation) and for another host's append to a shared
// store, so the page follows even where the file watch is late. A
// session whose lines read so far are no longer its start is read whole.
func (h *Handler) Refresh() { h.schedule(false) }

// Reload reads the whole session again soon: it was rewritten (a prune,
// a restore), which an append-only reading would miss when its last line
// is unchanged.
func (h *Handler) Reload() { h.schedule(true) }

// schedule reads the session once the writes of a burst have settled.
func (h *Handler) schedule(full bool) {
	h.timerMu.Lock()
	defer h.timerMu.Unlock()
	select {
	case <-h.done:
		return
	default:
	}
	h.full = h.full || full
	if h.timer != nil {
		h.timer.Reset(max(h.debounce, h.wait))
		return
	}
	h.timer = time.AfterFunc(h.debounce, func() {
		h.timerMu.Lock()
		full := h.full
		h.full = false
		h.timerMu.Unlock()
		start := time.Now()
		err := h.reload(full)
		// A whole reading of a 100 MB session costs about a second of
		// CPU, and every reading rebuilds the tree. Wait at least as long
		// as the last one took before the next, so a busy agent cannot
		// keep the viewer reading more than half the time.
		h.timerMu.Lock()
		h.wait = max(h.debounce, time.Since(start))
		if err != nil && full {
			h.full = true // the next event reads it whole still
		}
		h.timerMu.Unlock()
		if err != nil {
			// A rename in flight or a file being replaced: keep showing
			// the last good reading; the next event tries again.
			h.log.Warn("reading the session file again", "path", h.path, "error", err)
		}
	})
}

func (h *Handler) notify() {
	h.subsMu.Lock()
	defer h.subsMu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending; the stream reads the latest version
		}
	}
}

func (h *Handler) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.subsMu.Lock()
	h.subs[ch] = struct{}{}
	h.subsMu.Unlock()
	return ch, func() {
		h.subsMu.Lock()
		delete(h.subs, ch)
		h.subsMu.Unlock()
	}
}

func (h *Handler) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/session", h.apiSession)
	mux.HandleFunc("GET /api/tree", h.apiTree)
	mux.HandleFunc("GET /api/entry", h.apiEntry)
	mux.HandleFunc("GET /api/context", h.apiContext)
	mux.HandleFunc("GET /api/compactions", h.apiCompactions)
	mux.HandleFunc("GET /api/compaction", h.apiCompaction)
	mux.HandleFunc("GET /api/events", h.apiEvents)
	return mux
}

// ServeHTTP serves the page, its assets and the JSON API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !allowed(h.allowHost, r.Host) {
		http.Error(w, hostRefusal, http.StatusMisdirectedRequest)
		return
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	h.mux.ServeHTTP(w, r)
}

const hostRefusal = "the viewer answers only to an IP address or localhost"

// allowed applies check, or by default LoopbackHost: a page on another site
// can point a name it controls at 127.0.0.1 (DNS rebinding), so only names
// that are loopback by definition pass.
func allowed(check func(string) bool, host string) bool {
	if check != nil {
		return check(host)
	}
	return LoopbackHost(host)
}

// LoopbackHost reports whether a Host header names this machine by
// definition (an IP address or localhost), so that no DNS answer another
// site controls can lead a browser to it under that name. An IPv6
// literal comes in brackets with or without a port ("[::1]:7421", and
// "[::1]" on a default port, as a browser sends it); host names are
// case-insensitive.
func LoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if inner, ok := strings.CutPrefix(hostport, "["); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); !ok {
			return false
		}
		host = inner
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	return net.ParseIP(host) != nil
}

// LeafID is the id of the session's current leaf, "" for an empty session.
func (h *Handler) LeafID() string {
	if l := h.snap.Load().leaf; l != nil {
		return l.ID
	}
	return ""
}
