package viewer

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/admission"
	"github.com/pith-dev/pith/internal/dirwatch"
)

// SessionsOptions configure a Sessions handler.
type SessionsOptions struct {
	// Resolve maps a session name from the URL to its source. It is the
	// caller's confinement (a daemon resolves names under its root and
	// refuses the rest); an error answers 404 with no detail. A name is a
	// slash-separated path whose last segment ends in ".jsonl", as the
	// daemon's session names are.
	Resolve func(name string) (Source, error)
	// Authorize, when set, is asked on every request, before anything is
	// opened or served: may this request see the session name? (A daemon
	// checks the caller's token prefix here.) An error answers 403 with its
	// text, so it should name only what the caller sent.
	Authorize func(r *http.Request, name string) error
	// List names the sessions the index links to, for this request (a
	// daemon lists what the caller may see); nil for no index.
	List func(r *http.Request) ([]string, error)
	// Settings gives the settings in force; it is asked on every request,
	// so a configuration reload shows at once.
	Settings func() Settings
	Logger   hclog.Logger
	// Idle closes the viewer of a session nobody looked at for this long
	// (no request, no open event stream); 0 means 5 minutes.
	Idle time.Duration
	// MaxOpen bounds the sessions watched at once; past it the least
	// recently used idle one is closed, or, when every one has a live
	// page (an open event stream), the fair share below decides; else the
	// request is refused with 503. It is asked at every open, so a
	// daemon's reload applies at once (one lowering it closes idle
	// sessions down to it as pages are asked for). nil, or a value
	// below 1, means 64.
	MaxOpen func() int
	// MaxBytes bounds the bytes of all the open sessions together, as
	// read (Handler.Size; they take about 2.5 times that in memory): a
	// session is read whole and kept, so a count alone let one caller
	// hold MaxOpen of the largest sessions (64 × 512 MiB). Past it the
	// least recently used sessions are closed, as for MaxOpen: those
	// without a live page, then by the fair share; a session opened, or
	// grown by appends, past it when neither can make room is refused
	// (503), or closes the least recently used ones, live pages too,
	// when it grew; a session larger than MaxBytes alone is refused
	// (413). Asked at every reading. nil, or a value below 1, means
	// DefaultMaxBytes.
	MaxBytes func() int64
	// MaxBytesName names where MaxBytes comes from in the refusals (a
	// daemon's setting); "" names it the viewer's byte budget.
	MaxBytesName string
	// Caller names who a request is from (a daemon's token name), for
	// the fair share of MaxOpen: when every open session has a live page,
	// a caller holding more sessions (live, or opened by it and being
	// read) than the requester holds plus one gives up its least recently
	// used live one (its page's stream ends) — so one caller's pages
	// cannot lock every other caller out. Only a request for a session
	// that resolved makes room. nil: every request is from one caller.
	Caller func(r *http.Request) string
	// Follow, when set, is how the sessions follow their files: a
	// daemon's one file watch, shared with what else it follows (the
	// kernel allows a user few inotify instances). nil: Sessions makes a
	// watch of its own, for all its sessions.
	Follow FollowFunc
	// AllowHost is the Host header check, as in Options.
	AllowHost func(host string) bool
	// Daemon, when set, answers /s/NAME/api/daemon with what the daemon
	// knows beside the file (the last compaction run of the session, even
	// one a plugin cancelled and which wrote nothing; plugins; the
	// configuration in force), for the page's daemon panel. It is asked
	// after Authorize.
	Daemon func(r *http.Request, name string) any
	// Streams bound the live update streams of all the sessions
	// together (StreamCaps).
	Streams StreamCaps
	// Group, when set, arranges the index: the names List gave, in
	// groups (a project's sessions), each entry with a label; nil lists
	// the names sorted.
	Group func(names []string) []IndexGroup
	// SignOut, when set, is asked for the path the index's sign-out
	// button posts to ("": no button), for this request (a daemon's,
	// for a request of a browser signed in).
	SignOut func(r *http.Request) string

	// streams is the gate of Streams, shared by the sessions' handlers.
	streams *streamGate
}

// Sessions serves the viewer for many sessions: the index at / and each
// session's page and API under /s/NAME/. Open one with NewSessions; it is
// meant to be mounted by a daemon behind its own listener policy and
// authentication, and is read-only like Handler.
type Sessions struct {
	opts    SessionsOptions
	onClose func() error // what Close releases beside (Dir's root)
	mu      sync.Mutex
	open    map[string]*openSession
	done    chan struct{}
	wg      sync.WaitGroup

	// watch is the file watch Sessions made for its sessions (see
	// dirwatch), with the first session that has a path, when
	// SessionsOptions.Watch is nil.
	watchMu  sync.Mutex
	watch    *dirwatch.Watch
	watchErr error
}

// sharedWatch is the file watch every session of s shares.
func (s *Sessions) sharedWatch() (FollowFunc, error) {
	if s.opts.Follow != nil {
		return s.opts.Follow, nil
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watch == nil && s.watchErr == nil {
		s.watch, s.watchErr = dirwatch.New(s.opts.Logger)
	}
	if s.watchErr != nil {
		return nil, s.watchErr
	}
	return s.watch.Follow, nil
}

// FollowFunc calls fn with the operation of every file system event on
// path (absolute and clean) until stop is called; fn must not block.
type FollowFunc func(path string, fn func(fsnotify.Op)) (stop func(), err error)

// Source is where a session comes from: its path (watched) and the name
// the page shows for it (the path when empty), or no path and a name for
// a session kept in a store, and how to
// read it (Tail) and its prune archive when the caller must read through
// a confined root or a store. See Options. A session without a path
// changes when the caller says so: Refresh for an append, Reload for a
// rewrite.
type Source struct {
	Path        string
	Name        string
	Tail        Tail
	OpenArchive func() (io.ReadCloser, error)
	// Size is the session's size when it was resolved (0: unknown):
	// room for it in MaxBytes is made before it is read, and one larger
	// than MaxBytes is refused unread.
	Size int64
}

// openSession is a session in the viewer: h is nil while its first
// reading runs (outside the lock: a large session takes a second or more
// to read, and no other request may wait for it); ready is closed when
// it ends, with h or err set.
type openSession struct {
	name  string
	h     *Handler
	err   error
	ready chan struct{}
	used  time.Time
	// streams counts the open event streams (live pages) on the
	// session by caller.
	streams map[string]int
	// by is the caller whose request opened it: the session counts in
	// its share (evictFairLocked) while no page is live on it.
	by string
	// reserved is the room held in the byte budget while the first
	// reading runs (Source.Size).
	reserved int64
}

// soleCaller is the caller of o's streams when they are all one
// caller's. Callers hold s.mu.
func (o *openSession) soleCaller() string {
	for c := range o.streams {
		return c
	}
	return ""
}

// opened reports whether o's first reading is done and succeeded.
// Callers hold s.mu.
func (o *openSession) opened() bool { return o.h != nil }

// ErrTooManyOpen answers a request for one session more than MaxOpen
// when every open one is in use: the viewer's capacity, shared by every
// caller (admission.ErrCapacity, answered 503).
var ErrTooManyOpen error = &admission.Refusal{Bound: admission.ErrCapacity, Reason: errors.New("viewer: too many sessions open")}

// ErrOverBudget answers a request for a session that does not fit in
// MaxBytes beside the sessions with live pages (admission.ErrCapacity,
// as ErrTooManyOpen); ErrLargerThanBudget one for a session larger than
// MaxBytes alone, which never will — no refusal of admission's, which
// passes, but a size limit (413).
var (
	ErrOverBudget       error = &admission.Refusal{Bound: admission.ErrCapacity, Reason: errors.New("viewer: the sessions open hold the viewer's byte budget")}
	ErrLargerThanBudget       = errors.New("viewer: the session is larger than the viewer's byte budget")
)

// NewSessions returns the handler; Close it to stop every watcher.
func NewSessions(opts SessionsOptions) *Sessions {
	if opts.Idle <= 0 {
		opts.Idle = 5 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	opts.streams = opts.Streams.gate()
	s := &Sessions{opts: opts, open: map[string]*openSession{}, done: make(chan struct{})}
	s.wg.Add(1)
	go s.sweep()
	return s
}

// Open is how many sessions are being watched now.
func (s *Sessions) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Bytes is the size of the sessions open now, together (see MaxBytes).
func (s *Sessions) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytesLocked()
}

// Refresh tells the viewer of name, if one is open, that the session
// changed (see Handler.Refresh). It never opens one.
func (s *Sessions) Refresh(name string) {
	if h := s.handler(name); h != nil {
		h.Refresh()
	}
}

// handler is the open viewer of name, nil when none is (or its first
// reading is still running: it reads what is there then).
func (s *Sessions) handler(name string) *Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.open[name]; ok {
		return o.h
	}
	return nil
}

// Reload tells the viewer of name, if one is open, that the session was
// rewritten (see Handler.Reload). It never opens one.
func (s *Sessions) Reload(name string) {
	if h := s.handler(name); h != nil {
		h.Reload()
	}
}

// ReloadAll reads every open session again whole: what a daemon calls when
// its store's change announcements were interrupted.
func (s *Sessions) ReloadAll() {
	s.mu.Lock()
	open := make([]*Handler, 0, len(s.open))
	for _, o := range s.open {
		if o.opened() {
			open = append(open, o.h)
		}
	}
	s.mu.Unlock()
	for _, h := range open {
		h.Reload()
	}
}

// Close stops every session's watcher and event streams.
func (s *Sessions) Close() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	close(s.done)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, o := range s.open {
		if o.opened() {
			o.h.Close()
		}
		// One still being read is closed by its opener, which finds
		// s.done closed.
		delete(s.open, name)
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	var err error
	if s.watch != nil {
		err = s.watch.Close()
	}
	if s.onClose != nil {
		err = errors.Join(err, s.onClose())
	}
	return err
}

// IndexGroup is a heading of the index and the sessions under it.
type IndexGroup struct {
	Name     string
	Sessions []IndexEntry
}

// IndexEntry is a session in the index: its name (the link) and what
// the link reads.
type IndexEntry struct {
	Name, Label string
	sortKey     string
}

func (s *Sessions) sweep() {
	defer s.wg.Done()
	t := time.NewTicker(max(s.opts.Idle/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			s.mu.Lock()
			for name, o := range s.open {
				if o.opened() && len(o.streams) == 0 && now.Sub(o.used) >= s.opts.Idle {
					o.h.Close()
					delete(s.open, name)
				}
			}
			s.mu.Unlock()
		}
	}
}

// acquire returns the open viewer of name for a request of caller who,
// opening it when needed. The name is resolved before any room is made
// for it: a request for a session that does not exist, or that the
// caller may not read, must not close another caller's live page (a
// tenant asking for missing names ended one of another's pages each
// time). The first reading runs outside s.mu; concurrent requests for the
// same session wait for it, others do not.
func (s *Sessions) acquire(name, who string) (*openSession, error) {
	s.mu.Lock()
	o, ok := s.open[name]
	s.mu.Unlock()
	if ok {
		return s.await(o)
	}
	src, err := s.opts.Resolve(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if o, ok := s.open[name]; ok { // opened by another request meanwhile
		s.mu.Unlock()
		return s.await(o)
	}
	for limit := s.maxOpen(); len(s.open) >= limit; {
		if !s.evictLocked(nil) && !s.evictFairLocked(who) {
			s.mu.Unlock()
			return nil, ErrTooManyOpen
		}
	}
	// Room for the size the source told is made before the reading, and
	// held while it runs: concurrent first readings of large sessions
	// must not pass the budget together before any of them is counted.
	if err := s.fitLocked(src.Size, who); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	o = &openSession{name: name, ready: make(chan struct{}), used: time.Now(), streams: map[string]int{}, by: who, reserved: src.Size}
	s.open[name] = o
	s.mu.Unlock()

	h, err := s.openHandler(name, src, o)
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(o.ready)
	select {
	case <-s.done:
		if h != nil {
			h.Close()
		}
		h, err = nil, errors.New("viewer: closed")
	default:
	}
	o.reserved = 0
	if err == nil {
		if err = s.fitLocked(h.Size(), who); err != nil {
			h.Close()
		}
	}
	if err != nil {
		o.err = err
		if s.open[name] == o {
			delete(s.open, name)
		}
		return nil, err
	}
	o.h = h
	return o, nil
}

// DefaultMaxOpen is the bound of SessionsOptions.MaxOpen when it gives
// none.
const DefaultMaxOpen = 64

// DefaultMaxBytes is the bound of SessionsOptions.MaxBytes when it gives
// none: 1 GiB of sessions, about 2.5 GiB of memory.
const DefaultMaxBytes = 1 << 30

// maxBytes is the byte budget in force.
func (s *Sessions) maxBytes() int64 {
	if s.opts.MaxBytes != nil {
		if n := s.opts.MaxBytes(); n > 0 {
			return n
		}
	}
	return DefaultMaxBytes
}

// bytesLocked is the size of the sessions open (read), and the room
// held for those being read.
func (s *Sessions) bytesLocked() int64 {
	var n int64
	for _, o := range s.open {
		if o.opened() {
			n += o.h.Size()
		} else {
			n += o.reserved
		}
	}
	return n
}

// fitLocked makes room for a session of size bytes, just read for who,
// within the byte budget: it closes the least recently used sessions
// without a live page, then by the fair share (as for MaxOpen).
func (s *Sessions) fitLocked(size int64, who string) error {
	budget := s.maxBytes()
	name := cmp.Or(s.opts.MaxBytesName, "the budget")
	if size > budget {
		return fmt.Errorf("%w: %d bytes, %s for all open sessions is %d", ErrLargerThanBudget, size, name, budget)
	}
	for s.bytesLocked()+size > budget {
		if !s.evictLocked(nil) && !s.evictFairLocked(who) {
			return fmt.Errorf("%w (%s, %d bytes): no room for %d bytes more", ErrOverBudget, name, budget, size)
		}
	}
	return nil
}

// grew keeps the byte budget after a reading of o changed its size (an
// append, a rewrite): it closes the least recently used other sessions
// without a live page, then the least recently used sessions whatever
// their pages, o itself included — memory is the bound that holds.
func (s *Sessions) grew(o *openSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !o.opened() || s.open[o.name] != o {
		return // its first reading, which acquire fits; or closed
	}
	budget := s.maxBytes()
	for s.bytesLocked() > budget {
		if s.evictLocked(o) {
			continue
		}
		var oldest *openSession
		for _, c := range s.open {
			if c.opened() && (oldest == nil || c.used.Before(oldest.used)) {
				oldest = c
			}
		}
		s.opts.Logger.Info("viewer: a session closed to keep the byte budget", "session", oldest.name, "budget", budget)
		s.closeLocked(oldest.name)
	}
}

// maxOpen is the bound on the sessions open in force.
func (s *Sessions) maxOpen() int {
	if s.opts.MaxOpen != nil {
		if n := s.opts.MaxOpen(); n > 0 {
			return n
		}
	}
	return DefaultMaxOpen
}

// await is o, an open session, once its first reading is done.
func (s *Sessions) await(o *openSession) (*openSession, error) {
	s.mu.Lock()
	o.used = time.Now()
	s.mu.Unlock()
	<-o.ready
	if o.err != nil {
		return nil, o.err
	}
	return o, nil
}

// openHandler reads the session name, resolved to src, whole, as the
// session o.
func (s *Sessions) openHandler(name string, src Source, o *openSession) (*Handler, error) {
	var err error
	settings := Settings{}
	if s.opts.Settings != nil {
		settings = s.opts.Settings()
	}
	var follow FollowFunc
	if src.Path != "" {
		if follow, err = s.sharedWatch(); err != nil {
			return nil, fmt.Errorf("viewer: watch the session files: %w", err)
		}
	}
	return New(Options{Path: src.Path, Name: src.Name, Tail: src.Tail, OpenArchive: src.OpenArchive, Settings: settings, SettingsFunc: s.opts.Settings,
		AllowHost: s.opts.AllowHost, Logger: s.opts.Logger.With("session", name), follow: follow, streams: s.opts.streams,
		sized: func(int64) { s.grew(o) }})
}

// evictLocked closes the least recently used session without a stream,
// but except.
func (s *Sessions) evictLocked(except *openSession) bool {
	var oldest string
	for name, o := range s.open {
		if o != except && o.opened() && len(o.streams) == 0 && (oldest == "" || o.used.Before(s.open[oldest].used)) {
			oldest = name
		}
	}
	return s.closeLocked(oldest)
}

// evictFairLocked makes room for caller who when every open session has a
// live page: it closes, ending its streams, the least recently used
// session live for one caller only, taken from the caller holding the
// most sessions, provided that caller holds more than who's count plus
// one. A caller holds the sessions it has a live page on, and those it
// opened that have none (being read still): a caller firing requests for
// large sessions would otherwise count none while they were read, and
// each request would end another caller's page.
// After it the two are at worst level, so the closed page's reconnection
// (EventSource retries) finds no session to take back and gets 503:
// there is no ping-pong. Without it 64 live pages of one caller held
// every slot and every other caller got 503. A session live for several
// callers is never closed: it serves them all.
func (s *Sessions) evictFairLocked(who string) bool {
	live := map[string]int{} // sessions held, by caller
	for _, o := range s.open {
		if len(o.streams) == 0 {
			live[o.by]++
		}
		for c := range o.streams {
			live[c]++
		}
	}
	var victim, from string
	for name, o := range s.open {
		if !o.opened() || len(o.streams) != 1 {
			continue
		}
		c := o.soleCaller()
		if live[c] <= live[who]+1 {
			continue
		}
		if victim == "" || live[c] > live[from] || (live[c] == live[from] && o.used.Before(s.open[victim].used)) {
			victim, from = name, c
		}
	}
	if victim != "" {
		s.opts.Logger.Info("viewer: a caller's live page closed to make room for another caller", "session", victim, "caller", from, "live", live[from])
	}
	return s.closeLocked(victim)
}

// closeLocked closes the open session name ("": none), ending its
// streams.
func (s *Sessions) closeLocked(name string) bool {
	if name == "" {
		return false
	}
	s.open[name].h.Close()
	delete(s.open, name)
	return true
}

func (s *Sessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !allowed(s.opts.AllowHost, r.Host) {
		http.Error(w, hostRefusal, http.StatusMisdirectedRequest)
		return
	}
	switch r.URL.Path {
	case "/":
		s.index(w, r)
		return
	case "/app.css":
		http.ServeFileFS(w, r, assetFS, "assets/app.css")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/s/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	name, sub, ok := splitName(rest)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if sub == "" && !strings.HasSuffix(rest, "/") {
		// The page's links are relative: it must be served from NAME/.
		http.Redirect(w, r, "/s/"+rest+"/", http.StatusMovedPermanently)
		return
	}
	if s.opts.Authorize != nil {
		if err := s.opts.Authorize(r, name); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
	}
	if sub == "api/daemon" && s.opts.Daemon != nil {
		writeJSON(w, s.opts.Daemon(r, name))
		return
	}
	who := ""
	if s.opts.Caller != nil {
		who = s.opts.Caller(r)
	}
	o, err := s.acquire(name, who)
	if errors.Is(err, ErrTooManyOpen) {
		http.Error(w, "too many sessions are open in the viewer; try again later", admission.HTTPStatus(err))
		return
	}
	if errors.Is(err, ErrOverBudget) {
		// Sizes only: nothing of another caller's sessions.
		w.Header().Set("Retry-After", "5")
		http.Error(w, err.Error()+"; try again later", admission.HTTPStatus(err))
		return
	}
	if errors.Is(err, ErrLargerThanBudget) {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	if err != nil {
		s.opts.Logger.Debug("viewer: session refused", "name", name, "error", err)
		http.NotFound(w, r)
		return
	}
	stream := sub == "api/events"
	if stream {
		s.mu.Lock()
		o.streams[who]++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			if o.streams[who]--; o.streams[who] <= 0 {
				delete(o.streams, who)
			}
			o.used = time.Now()
			s.mu.Unlock()
		}()
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + sub
	r2.URL.RawPath = ""
	o.h.ServeHTTP(w, r2)
}

// splitName splits "dir/name.jsonl/api/tree" after the first segment that
// ends in ".jsonl".
func splitName(rest string) (name, sub string, ok bool) {
	i := 0
	for {
		j := strings.IndexByte(rest[i:], '/')
		seg := rest[i:]
		if j >= 0 {
			seg = rest[i : i+j]
		}
		if strings.HasSuffix(seg, ".jsonl") {
			if j < 0 {
				return rest, "", true
			}
			return rest[:i+j], rest[i+j+1:], true
		}
		if j < 0 {
			return "", "", false
		}
		i += j + 1
	}
}

// indexPage is parsed on first use: every pith command links this
// package, few show the page.
var indexPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pith sessions</title><link rel="stylesheet" href="/app.css"></head>
<body><main class="pane index"><h1>Sessions</h1>
{{if .SignOut}}<form method="post" action="{{.SignOut}}"><button type="submit">Sign out</button></form>{{end}}
{{if .Groups}}{{range .Groups}}<h2>{{.Name}}</h2>
<ul>{{range .Sessions}}<li><a href="/s/{{.Name}}/">{{.Label}}</a></li>{{end}}</ul>
{{end}}{{else if .Names}}<ul>{{range .Names}}<li><a href="/s/{{.}}/">{{.}}</a></li>{{end}}</ul>{{else}}<p>No sessions.</p>{{end}}
</main></body></html>
`))
})

func (s *Sessions) index(w http.ResponseWriter, r *http.Request) {
	if s.opts.List == nil {
		http.NotFound(w, r)
		return
	}
	names, err := s.opts.List(r)
	if err != nil {
		http.Error(w, "cannot list the sessions", http.StatusInternalServerError)
		return
	}
	sort.Strings(names)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; form-action 'self'; frame-ancestors 'none'")
	signOut := ""
	if s.opts.SignOut != nil {
		signOut = s.opts.SignOut(r)
	}
	var groups []IndexGroup
	if s.opts.Group != nil {
		groups = s.opts.Group(names)
	}
	_ = indexPage().Execute(w, struct {
		Names   []string
		Groups  []IndexGroup
		SignOut string
	}{names, groups, signOut})
}
