package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/internal/admission"
	"github.com/pith-dev/pith/internal/checksum"
	"github.com/pith-dev/pith/internal/signin"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/served"
	"github.com/pith-dev/pith/viewer"
)

// ViewerCookie is the viewer's sign-in cookie: an opaque random id the
// daemon gave the browser at /login, which only this daemon's memory
// (Viewer.logins) ties to the token presented then. A browser cannot
// send an authorization header of its own, and a token never goes into a
// URL (where logs and history keep it) — nor into a cookie: cookies are
// not isolated by port, so the browser sends them to every server on the
// host, and one holding the token gave any of them the tenant's gRPC
// credential.
const ViewerCookie = "pith_viewer_signin"

// legacyTokenCookie is where earlier versions kept the token itself; it
// is cleared at every sign-in and sign-out, and never read.
const legacyTokenCookie = "pith_token"

// maxListed bounds the session names the viewer's index lists.
const maxListed = 10000

// Viewer is the read-only web viewer of every session of the daemon
// (server.viewer): the files under sessions.root, or the sessions of a
// shared sessions.store. It reads through the daemon's root handle or
// store and name grammar, and asks every request for the credentials a
// gRPC call needs, scoped the same way: a token's prefix limits the
// sessions it shows.
type Viewer struct {
	s        *Server
	sessions *viewer.Sessions
	mux      *http.ServeMux
	exposed  bool
	// csrf refuses a cross-site request that is not a read (the login
	// and logout forms' POSTs): another site must not sign the browser in
	// with a token of its choosing, nor out.
	csrf *http.CrossOriginProtection
	// logins are the browsers signed in (server.viewerLoginIdle,
	// server.viewerLoginMaxAge); a login stands for the SHA-256 of the
	// token it was made with.
	logins *signin.Store
	done   chan struct{}
}

// ViewerOption tunes NewViewer.
type ViewerOption func(*viewer.SessionsOptions)

// ViewerStreams bounds the viewer's live update streams in all and per
// remote address (viewer.StreamCaps), below its listener's connection
// caps so that pages always find a connection: each caller's are
// bounded by server.maxStreams besides.
func ViewerStreams(caps viewer.StreamCaps) ViewerOption {
	return func(o *viewer.SessionsOptions) { o.Streams = caps }
}

// NewViewer returns the viewer's handler; exposed says its listener is
// reachable from other machines (then, as for gRPC calls, anonymous
// requests are refused). Close it before the Server.
func (s *Server) NewViewer(exposed bool, options ...ViewerOption) *Viewer {
	v := &Viewer{s: s, exposed: exposed, csrf: http.NewCrossOriginProtection(), done: make(chan struct{})}
	v.logins = signin.New(signin.Options{
		Idle:   func() time.Duration { return s.cfg.Load().Server.ViewerLoginIdle },
		MaxAge: func() time.Duration { return s.cfg.Load().Server.ViewerLoginMaxAge },
	})
	go v.forgetRevoked()
	opts := viewer.SessionsOptions{
		Resolve:   v.resolve,
		Authorize: v.authorize,
		List:      v.list,
		Settings: func() viewer.Settings {
			st := s.opts.Settings(s.cfg.Load())
			return viewer.Settings{ContextWindow: st.ContextWindow, ReserveTokens: st.ReserveTokens, AutoCompaction: st.Enabled}
		},
		Logger:    s.log.Named("viewer"),
		AllowHost: v.allowHost,
		// The viewer's slots are shared fairly among callers as the
		// daemon knows them (a token's name, a certificate's subject).
		Caller: func(r *http.Request) string { return viewerCaller(r).name },
		// server.viewerMaxSessions in force, at every open.
		MaxOpen: func() int { return s.cfg.Load().Server.ViewerMaxSessions },
		// server.viewerMaxBytes in force, at every reading.
		MaxBytes:     func() int64 { return int64(s.cfg.Load().Server.ViewerMaxBytes) },
		MaxBytesName: "server.viewerMaxBytes",
		Daemon:       v.daemonPanel,
		SignOut: func(r *http.Request) string {
			if _, _, ok := v.presentedBy(r, false); ok {
				return "/logout"
			}
			return ""
		},
	}
	for _, o := range options {
		o(&opts)
	}
	if s.files != nil {
		// The daemon's one file watch, shared with the sessions it
		// follows for their WatchEvents clients.
		if follow, err := s.files.Watch(); err == nil {
			opts.Follow = follow
		}
	}
	v.sessions = viewer.NewSessions(opts)
	s.viewer.Store(v.sessions)
	v.mux = http.NewServeMux()
	v.mux.HandleFunc("GET /login", v.loginForm)
	v.mux.HandleFunc("POST /login", v.login)
	v.mux.HandleFunc("POST /logout", v.logout)
	// The style sheet is the same for everyone; the login page needs it.
	v.mux.Handle("GET /app.css", v.sessions)
	v.mux.Handle("/", http.HandlerFunc(v.serveAuthenticated))
	return v
}

// Close stops the viewer's watchers and streams.
func (v *Viewer) Close() error {
	select {
	case <-v.done:
	default:
		close(v.done)
	}
	v.s.viewer.Store(nil)
	return v.sessions.Close()
}

// forgetRevoked ends, at every configuration applied, the logins whose
// token is no longer in server.tokens: each request checks its login's
// token against the tokens in force, and this makes a revocation final —
// the same token configured again later does not bring them back.
func (v *Viewer) forgetRevoked() {
	for {
		next := *v.s.applied.Load()
		tokens := v.s.cfg.Load().Server.Tokens
		v.logins.Retain(func(subject string) bool {
			sum, err := checksum.Parse(subject)
			if err != nil {
				return false
			}
			_, ok := matchSum(tokens, sum)
			return ok
		})
		select {
		case <-next:
		case <-v.done:
			return
		case <-v.s.shutdown:
			return
		}
	}
}

func (v *Viewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !v.allowHost(r.Host) {
		http.Error(w, "the viewer answers only to an IP address or localhost unless server.tokens or client certificates guard it", http.StatusMisdirectedRequest)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if err := v.csrf.Check(r); err != nil {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	v.mux.ServeHTTP(w, r)
}

// allowHost checks the Host header of every request. A viewer that takes
// anonymous requests answers only to names that are loopback by
// definition: any web page can point a name it controls at 127.0.0.1 (DNS
// rebinding) and would then read every session as a page of its own
// origin. Where every request needs credentials (server.tokens, a client
// certificate, or an exposed listener, which refuses anonymous requests),
// a rebound page has none — the cookie belongs to the origin that signed
// in — so a real host name in front of the daemon is fine. Asked on every
// request: a reload adding or removing the tokens changes the answer.
func (v *Viewer) allowHost(host string) bool {
	if v.exposed || v.s.opts.ClientCerts || len(v.s.cfg.Load().Server.Tokens) > 0 {
		return true
	}
	return viewer.LoopbackHost(host)
}

type viewerCallerKey struct{}

// presentedBy is what an HTTP request shows: a verified client
// certificate, an authorization header, or else the login its cookie
// names (ok false without one), which stands for its token's SHA-256.
// touch marks the login used (see signin.Store.Peek).
func (v *Viewer) presentedBy(r *http.Request, touch bool) (pr presented, login signin.Session, ok bool) {
	if r.TLS != nil {
		pr.certOK, pr.certName = verifiedCert(*r.TLS)
	}
	pr.authorization = r.Header.Values("Authorization")
	return v.withLogin(pr, loginID(r), touch)
}

// loginID is the login id of r's cookie, "" without one.
func loginID(r *http.Request) string {
	if c, err := r.Cookie(ViewerCookie); err == nil {
		return c.Value
	}
	return ""
}

// withLogin is pr with the token of the login id stands for, when pr has
// no authorization header of its own.
func (v *Viewer) withLogin(pr presented, id string, touch bool) (presented, signin.Session, bool) {
	if len(pr.authorization) > 0 || id == "" {
		return pr, signin.Session{}, false
	}
	find := v.logins.Peek
	if touch {
		find = v.logins.Lookup
	}
	login, ok := find(id)
	if ok {
		// A malformed subject is none: check then asks for a token.
		pr.tokenSum, _ = checksum.Parse(login.Subject)
	}
	return pr, login, ok
}

func (v *Viewer) serveAuthenticated(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the viewer is read-only", http.StatusMethodNotAllowed)
		return
	}
	pr, login, signedIn := v.presentedBy(r, true)
	c, err := v.s.check(pr, v.exposed)
	if err != nil {
		v.s.metrics.authFailures.Inc()
		if r.URL.Path == "/" || strings.HasSuffix(r.URL.Path, "/") {
			// A page: send the browser to the form that sets the cookie.
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	// A live update stream counts against the caller's server.maxStreams
	// with its WatchEvents streams; any other request against its
	// server.maxCallsInFlight with its gRPC calls (a page's context of a
	// large session costs the daemon as much as a GetContext).
	stream := strings.HasSuffix(r.URL.Path, "/api/events")
	kind := slotCall
	if stream {
		kind = slotStream
	}
	release, err := v.s.take(c, kind)
	if err != nil {
		if errors.Is(err, ErrBusy) {
			// Passing, as the gRPC calls' Unavailable with RetryInfo says.
			w.Header().Set("Retry-After", "1")
		}
		// The caller's own limit: 429 (internal/admission's rule).
		http.Error(w, err.Error(), admission.HTTPStatus(err))
		return
	}
	defer release()
	if stream {
		// A token revoked or narrowed by a reload ends the stream.
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/s/"), "/api/events")
		ctx := r.Context()
		if signedIn {
			// A login ends the stream when it ends: at its absolute
			// age, or a logout.
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, login.Expires)
			defer cancel()
			go func() {
				select {
				case <-login.Ended:
					cancel()
				case <-ctx.Done():
				}
			}()
		}
		// Read here: the check runs beside the handler.
		id, first := loginID(r), pr
		first.tokenSum = nil
		ctx, stop := v.s.revalidate(ctx, func() error {
			pr, _, _ := v.withLogin(first, id, false)
			c, err := v.s.check(pr, v.exposed)
			if err != nil {
				return err
			}
			if !c.may(name) {
				return fmt.Errorf("%w: %q", ErrForbidden, name)
			}
			return nil
		})
		defer stop()
		r = r.WithContext(ctx)
	}
	v.sessions.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerCallerKey{}, c)))
}

func viewerCaller(r *http.Request) caller {
	c, _ := r.Context().Value(viewerCallerKey{}).(caller)
	return c
}

func (v *Viewer) authorize(r *http.Request, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if c := viewerCaller(r); !c.may(name) {
		return fmt.Errorf("%w: %q", ErrForbidden, name)
	}
	return nil
}

// resolve reads a session and its archive through the root handle or
// from the store, within server.maxSessionBytes; the path is only for the
// file watch.
func (v *Viewer) resolve(name string) (viewer.Source, error) {
	if err := checkName(name); err != nil {
		return viewer.Source{}, err
	}
	if v.s.files == nil {
		return v.resolveStored(name)
	}
	file, err := v.s.files.Locate(name)
	if err != nil {
		return viewer.Source{}, err
	}
	fileTail := viewer.FileTail(file.Open, func() int64 { n, _ := v.readLimit(); return n })
	tail := func(after int) ([]byte, int, error) {
		data, n, err := fileTail(after)
		if errors.Is(err, viewer.ErrTooLarge) {
			err = v.tooLarge(name)
		}
		return data, n, err
	}
	archive := func() (io.ReadCloser, error) { return file.OpenArchive() }
	return viewer.Source{Path: file.Path, Name: name, Tail: tail, OpenArchive: archive, Size: file.Size}, nil
}

// readLimit is the largest session the viewer reads, and the setting
// that says so: server.maxSessionBytes, or server.viewerMaxBytes when
// that is smaller — a session larger than the viewer's whole byte
// budget is refused before it is read, not after.
func (v *Viewer) readLimit() (int64, string) {
	srv := v.s.cfg.Load().Server
	if srv.ViewerMaxBytes < srv.MaxSessionBytes {
		return int64(srv.ViewerMaxBytes), "server.viewerMaxBytes, the viewer's budget for all its open sessions"
	}
	return int64(srv.MaxSessionBytes), "server.maxSessionBytes"
}

// tooLarge refuses the session name over readLimit.
func (v *Viewer) tooLarge(name string) error {
	lim, key := v.readLimit()
	return fmt.Errorf("%w: session %q is over %s (%d): %w", ErrLimit, name, key, lim, viewer.ErrLargerThanBudget)
}

// storeReadTimeout bounds one reading of a stored session by the viewer.
const storeReadTimeout = 30 * time.Second

// resolveStored reads a session of the shared store: whole within
// server.maxSessionBytes, then what any host appended, as the store's
// events tell (storeChanged). A name the store does not have is refused
// here, as a missing file is: the viewer makes room for what resolved,
// and a request for a missing session must not close another caller's
// page.
func (v *Viewer) resolveStored(name string) (viewer.Source, error) {
	st := v.s.opts.Store
	// The session's size, asked without reading it: it says the session
	// is there, one over the limit is refused before a byte is read, and
	// the viewer makes room for the size before its first reading.
	var size int64
	admit := v.admitRead(name)
	ctx, cancel := context.WithTimeout(context.Background(), storeReadTimeout)
	_, err := st.ExportWithin(ctx, name, func(n int64) error {
		if err := admit(n); err != nil {
			return err
		}
		size = n
		return errSized
	})
	cancel()
	if !errors.Is(err, errSized) {
		return viewer.Source{}, err
	}
	// read is what this viewer has read of the session since its last
	// whole reading: the limit holds for a session that grows by appends
	// as for one read whole (a file's tail checks the file's size).
	var (
		mu   sync.Mutex
		read storedRead
	)
	tail := func(after int) ([]byte, int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), storeReadTimeout)
		defer cancel()
		data, n, err := readStored(ctx, st, name, after, admit)
		if err != nil {
			return nil, 0, err
		}
		mu.Lock()
		defer mu.Unlock()
		next, total := read.add(after, data)
		if limit, _ := v.readLimit(); int64(total) > limit {
			return nil, 0, v.tooLarge(name)
		}
		read = next
		return data, n, nil
	}
	archive := func() (io.ReadCloser, error) {
		ctx, cancel := context.WithTimeout(context.Background(), storeReadTimeout)
		defer cancel()
		data, err := st.ReadSidecar(ctx, name, compaction.ArchiveSuffix)
		if err != nil {
			return nil, err
		}
		if data == nil {
			return nil, fs.ErrNotExist
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	return viewer.Source{Name: name, Size: size, Tail: tail, OpenArchive: archive}, nil
}

// errSized stops ExportWithin once it has told the size.
var errSized = errors.New("sized")

// admitRead refuses a reading of the session name, of the size it is
// asked with, over readLimit before it is read.
func (v *Viewer) admitRead(name string) func(int64) error {
	return func(n int64) error {
		if limit, _ := v.readLimit(); n > limit {
			return v.tooLarge(name)
		}
		return nil
	}
}

// readStored is Tail of a stored session that asks admit with the
// session's size before a byte is read: always for a reading from the
// start, a whole one (ExportWithin), and for a catch-up where the store
// can tell the size (TailWithin).
func readStored(ctx context.Context, st store.Store, name string, after int, admit func(int64) error) ([]byte, int, error) {
	if after > 0 {
		return st.TailWithin(ctx, name, after, admit)
	}
	data, err := st.ExportWithin(ctx, name, admit)
	if err != nil {
		return nil, 0, err
	}
	tail, n := store.TailOf(data, 0)
	return tail, n, nil
}

// storedRead is how much of a stored session the viewer holds: its
// first lines complete lines, of size bytes.
type storedRead struct{ lines, size int }

// add is r after data, what Tail returned after the first after lines,
// and the session's size as read then. The viewer reads an append from
// its last line on (to check the line is still there): lines read before
// are counted once, not at every reading. Only complete lines are kept
// in the count, so a torn last line counts at its full length once done.
func (r storedRead) add(after int, data []byte) (next storedRead, total int) {
	if after <= 0 {
		r = storedRead{}
		after = 0
	}
	skip := 0 // the bytes of data already counted
	for k := after; k < r.lines && skip < len(data); k++ {
		i := bytes.IndexByte(data[skip:], '\n')
		if i < 0 {
			skip = len(data)
			break
		}
		skip += i + 1
	}
	complete := bytes.LastIndexByte(data, '\n') + 1
	next = storedRead{lines: after + bytes.Count(data[:complete], []byte("\n")), size: r.size}
	if complete > skip {
		next.size += complete - skip
	}
	return next, r.size + len(data) - skip
}

// list names the sessions the caller may see, under the root or in the
// store.
func (v *Viewer) list(r *http.Request) ([]string, error) {
	return v.s.src.List(r.Context(), viewerCaller(r).may, maxListed)
}

// loginPage is parsed on first use: every pith command links this
// package, few show the page.
var loginPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Pith viewer: sign in</title><link rel="stylesheet" href="/app.css"></head>
<body><main class="pane index"><h1>Sign in</h1>
{{if .}}<p role="alert">{{.}}</p>{{end}}
<form method="post" action="/login">
<label for="token">Token (a server.tokens entry)</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form></main></body></html>
`))
})

func (v *Viewer) loginForm(w http.ResponseWriter, r *http.Request) {
	v.renderLogin(w, http.StatusOK, "")
}

func (v *Viewer) renderLogin(w http.ResponseWriter, code int, msg string) {
	var buf bytes.Buffer
	_ = loginPage().Execute(&buf, msg)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// login checks a token posted by the form and begins a login: the
// browser gets its opaque id in an HttpOnly, SameSite=Strict cookie
// (scripts cannot read it, other sites cannot make the browser send it),
// Secure over TLS, that expires with the login's absolute age. The token
// itself stays nowhere but in the daemon's configuration, as its hash.
func (v *Viewer) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		v.renderLogin(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	tok := strings.TrimSpace(r.PostForm.Get("token"))
	pr, _, _ := v.presentedBy(r, false)
	pr.authorization, pr.tokenSum = []string{"Bearer " + tok}, nil
	if _, err := v.s.check(pr, v.exposed); err != nil || tok == "" || len(v.s.cfg.Load().Server.Tokens) == 0 {
		v.s.metrics.authFailures.Inc()
		msg := "Unknown or revoked token."
		if len(v.s.cfg.Load().Server.Tokens) == 0 {
			msg = "This daemon has no server.tokens; it needs no sign-in (or a client certificate)."
		}
		v.renderLogin(w, http.StatusUnauthorized, msg)
		return
	}
	if old, err := r.Cookie(ViewerCookie); err == nil {
		v.logins.Delete(old.Value) // a sign-in again replaces the login
	}
	id, login := v.logins.Create(HashToken(tok))
	http.SetCookie(w, v.cookie(r, id, login.Expires))
	http.SetCookie(w, v.cookie(r, "", time.Time{}))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// cookie is the login cookie of id, expiring at expires; with no id, the
// legacy token cookie, expired (cleared).
func (v *Viewer) cookie(r *http.Request, id string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: ViewerCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if id == "" {
		c.Name, c.MaxAge = legacyTokenCookie, -1
		return c
	}
	c.Expires = expires
	c.MaxAge = max(1, int(time.Until(expires).Seconds()))
	return c
}

// logout ends the login of the request's cookie and clears the cookie
// (and the legacy token cookie). Like the login form it is a POST, which
// the cross-origin check guards: another site cannot sign the browser
// out.
func (v *Viewer) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(ViewerCookie); err == nil {
		v.logins.Delete(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: ViewerCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.SetCookie(w, v.cookie(r, "", time.Time{}))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// refreshViewer tells the viewer, when one runs, that the session named
// rel changed (an engine event).
func (s *Server) refreshViewer(rel string) {
	if vs := s.viewer.Load(); vs != nil {
		vs.Refresh(rel)
	}
}

// storeChanged hands on what the shared store says any host did to the
// session named rel: the session open here under that name, when it has
// WatchEvents clients, catches up at once (and announces what it read:
// entries_appended, session_rewritten) instead of at its next call; the
// viewer, when one runs, reads an append incrementally and a rewrite (or
// a session created again) whole.
func (s *Server) storeChanged(rel, kind string) {
	if kind == store.EventResync {
		s.pokeFollowed(nil)
	} else {
		s.pokeFollowed(served.StoredKey(rel))
	}
	vs := s.viewer.Load()
	if vs == nil {
		return
	}
	switch kind {
	case store.EventAppended:
		vs.Refresh(rel)
	case store.EventRewritten, store.EventCreated:
		vs.Reload(rel)
	case store.EventResync:
		vs.ReloadAll()
	}
}
