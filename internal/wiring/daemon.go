package wiring

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/internal/admission"
	"github.com/pith-dev/pith/internal/server"
	"github.com/pith-dev/pith/store"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// ServeOptions are what `pith serve` was started with: its flags, its
// logger and its output.
type ServeOptions struct {
	// ConfigPath is the configuration file, watched for changes; "" runs
	// on the defaults, without reloads.
	ConfigPath string
	// Listen, Metrics and Viewer override server.listen, server.metrics
	// and server.viewer when set.
	Listen, Metrics, Viewer string
	// ReadyFile, when set, gets the bound address once the daemon serves.
	ReadyFile string
	// Verbose keeps the logger's level over logging.level.
	Verbose bool
	// Stdout gets the "listening on" and "viewer on" lines.
	Stdout io.Writer
	Logger hclog.InterceptLogger
	// HostVersion is sent to the plugins.
	HostVersion string
	// OpenStore connects to the store sessions.store names.
	OpenStore func(ctx context.Context, url string) (store.Store, error)
}

// Serve runs the daemon until ctx ends: configuration, store, server,
// listeners, reload watcher, then a graceful shutdown. Each job is a step
// of its own below; the daemon value carries what a later step needs and
// what the shutdown must undo.
func Serve(ctx context.Context, o ServeOptions) error {
	d := &daemon{opts: o, log: o.Logger}
	defer d.undo()
	if err := d.loadConfig(); err != nil {
		return err
	}
	ends, err := d.endpoints()
	if err != nil {
		return err
	}
	if err := d.openSessions(ctx); err != nil {
		return err
	}
	if err := d.startServer(ctx, ends); err != nil {
		return err
	}
	serveErr, err := d.serve(ends)
	if err != nil {
		return err
	}
	d.watchConfig(ctx)
	addr := boundAddress(d.lis)
	if err := d.announce(o.Stdout, o.ReadyFile, addr); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("serve %s: %w", addr, err)
	}
	d.shutdown()
	return nil
}

// daemon is the state of one `pith serve` run.
type daemon struct {
	opts    ServeOptions
	log     hclog.InterceptLogger
	configs *config.Store
	watcher *config.Watcher // nil without a configuration file
	cfg     *config.Config  // the configuration at start
	// sessions is the shared store sessions.store names; nil for the
	// files under sessions.root.
	sessions store.Store
	srv      *server.Server
	grpc     *grpc.Server
	lis      net.Listener
	https    []*http.Server // metrics and viewer
	viewer   string         // the viewer's URL, when it runs
	// undos run in reverse order when Serve returns.
	undos []func()
}

func (d *daemon) onExit(fn func()) { d.undos = append(d.undos, fn) }

func (d *daemon) undo() {
	for i := len(d.undos) - 1; i >= 0; i-- {
		d.undos[i]()
	}
}

// loadConfig loads the configuration and, with a file, prepares its
// watcher (run by watchConfig once the server exists).
func (d *daemon) loadConfig() error {
	path := d.opts.ConfigPath
	if path == "" {
		cfg, err := config.Load("")
		if err != nil {
			return err
		}
		d.configs = config.NewStore(cfg)
	} else {
		var err error
		d.configs, d.watcher, err = config.Open(path, config.WatcherOptions{
			Logger: d.log.Named("config"),
			// d.srv is set before the watcher runs.
			OnReload: func(ctx context.Context, old, next *config.Config) error { return d.srv.PrepareReload(ctx, old, next) },
			Observe:  func(r config.Result) { d.srv.ObserveReload(r) },
		})
		if err != nil {
			return err
		}
		d.onExit(func() { d.watcher.Close() })
	}
	d.cfg = d.configs.Snapshot()
	if !d.opts.Verbose && d.cfg.Logging.Level != "" {
		d.log.SetLevel(hclog.LevelFromString(d.cfg.Logging.Level))
	}
	return nil
}

// endpoints are the addresses the daemon serves on, and its TLS.
type endpoints struct {
	listen, metrics, viewer string
	tls                     *tls.Config
	// caps bound the connections of each listener (connCaps).
	caps admission.Caps
}

// endpoints resolves the addresses (flags over configuration) and checks
// them by the exposure rule the configuration's own addresses passed.
func (d *daemon) endpoints() (endpoints, error) {
	e := endpoints{
		listen:  firstNonEmpty(d.opts.Listen, d.cfg.Server.Listen),
		metrics: firstNonEmpty(d.opts.Metrics, d.cfg.Server.Metrics),
		viewer:  firstNonEmpty(d.opts.Viewer, d.cfg.Server.Viewer),
	}
	for _, addr := range []string{e.listen, e.metrics, e.viewer} {
		if p := d.cfg.Server.ExposureProblem(addr); p != "" {
			return e, errors.New(p)
		}
	}
	if d.cfg.Server.TLS.Enabled() {
		var err error
		if e.tls, err = server.TLSConfig(d.cfg.Server.TLS); err != nil {
			return e, err
		}
	}
	n := 0
	for _, addr := range []string{e.listen, e.metrics, e.viewer} {
		if addr != "" {
			n++
		}
	}
	e.caps = ConnCaps(d.cfg.Server, n, d.log)
	return e, nil
}

// openSessions connects to the store sessions.store names, if any: a
// PostgreSQL database several hosts share (its schema migrated here). The
// URL's password never reaches the log or the error.
func (d *daemon) openSessions(ctx context.Context) error {
	if d.cfg.Sessions.Store == "" {
		return nil
	}
	st, err := d.opts.OpenStore(ctx, d.cfg.Sessions.Store)
	if err != nil {
		return fmt.Errorf("sessions.store %s: %s", d.cfg.Sessions.StoreDisplay(), d.cfg.Sessions.Scrub(err.Error()))
	}
	// What the store cannot do without failing a call (a PostgreSQL
	// store's NOTIFY refused) is said in the daemon's log.
	if l, ok := st.(interface{ SetLogger(hclog.Logger) }); ok {
		l.SetLogger(d.log.Named("store"))
	}
	d.sessions = st
	d.onExit(func() { st.Close() })
	return nil
}

// startServer builds the SessionService: summarizer, plugins, engine
// settings, sessions, subscribed to configuration changes.
func (d *daemon) startServer(ctx context.Context, e endpoints) error {
	log := d.log
	srv, err := server.New(ctx, server.Options{
		RequireAuth: !config.Loopback(e.listen),
		ClientCerts: e.tls != nil && e.tls.ClientCAs != nil,
		Config:      d.cfg,
		Logger:      log,
		Store:       d.sessions,
		Summarizer: func(c *config.Config) (summary.Summarizer, error) {
			s, _, err := Summarizer(c, Provider{}, log.Named("summarizer"))
			return s, err
		},
		Settings:    EngineSettings,
		PluginSpecs: PluginSpecs,
		HostVersion: d.opts.HostVersion,
	})
	if err != nil {
		return err
	}
	d.srv = srv
	// Registered first, so it runs last: after the listeners stopped.
	d.onExit(d.closeServer)
	d.onExit(d.configs.Subscribe(srv.ApplyConfig))
	return nil
}

// closeServer closes the server (once): running operations finish within
// server.shutdownTimeout, plugins stop, sessions close.
func (d *daemon) closeServer() {
	sctx, cancel := context.WithTimeout(context.Background(), d.cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := d.srv.Close(sctx); err != nil {
		d.log.Error("shutdown", "error", err)
	}
}

// serve opens the listeners and serves gRPC, then /metrics and the viewer
// when configured. The channel gets the gRPC server's end.
func (d *daemon) serve(e endpoints) (<-chan error, error) {
	lis, err := ListenLimited(e.listen, "grpc", e.caps, d.log)
	if err != nil {
		return nil, err
	}
	d.srv.ObserveListener("grpc", lis)
	d.lis = lis
	gopts := d.srv.GRPCOptions()
	if e.tls != nil {
		gopts = append(gopts, d.srv.GRPCCreds(credentials.NewTLS(e.tls)))
	}
	d.grpc = grpc.NewServer(gopts...)
	d.srv.Register(d.grpc, servesReflection(d.cfg.Server, e.listen))
	serveErr := make(chan error, 1)
	go func() { serveErr <- d.grpc.Serve(lis) }()
	d.onExit(d.grpc.Stop) // after a graceful stop: does nothing
	if e.metrics != "" {
		if err := d.serveMetrics(e.metrics, e); err != nil {
			return nil, err
		}
	}
	if e.viewer != "" {
		if err := d.serveViewer(e.viewer, e); err != nil {
			return nil, err
		}
	}
	return serveErr, nil
}

// HTTPIdle closes a keep-alive connection of /metrics or the viewer that
// no request used for that long, as the gRPC listener does (server's
// connIdle): left open they piled up without bound, before any
// credential was asked. A live page's event stream is a request, not
// idle.
const HTTPIdle = 2 * time.Minute

func (d *daemon) serveMetrics(addr string, e endpoints) error {
	lim, err := ListenLimited(addr, "metrics", e.caps, d.log)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	d.srv.ObserveListener("metrics", lim)
	var ml net.Listener = lim
	handler := d.srv.MetricsHandler()
	scheme := "http"
	if !config.Loopback(addr) {
		// Reachable from elsewhere: the same TLS and credentials as
		// the gRPC calls (ExposureProblem guarantees they exist).
		handler = d.srv.MetricsAuth(handler)
		ml = tls.NewListener(ml, e.tls)
		scheme = "https"
	} else {
		handler = server.LoopbackOnly(handler)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	hs := d.httpServer(mux)
	go func() { _ = hs.Serve(ml) }()
	d.https = append(d.https, hs)
	d.log.Info("metrics", "address", scheme+"://"+ml.Addr().String()+"/metrics")
	return nil
}

// httpServer is the HTTP server of /metrics and the viewer: a new
// connection has server.handshakeTimeout for its TLS handshake and its
// first request's headers (net/http's TLS handshake runs under the
// ReadHeaderTimeout), then a keep-alive connection is closed after
// HTTPIdle without a request.
func (d *daemon) httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: d.cfg.Server.HandshakeTimeout, IdleTimeout: HTTPIdle}
}

func (d *daemon) serveViewer(addr string, e endpoints) error {
	lim, err := ListenLimited(addr, "viewer", e.caps, d.log)
	if err != nil {
		return fmt.Errorf("viewer listener: %w", err)
	}
	d.srv.ObserveListener("viewer", lim)
	var vl net.Listener = lim
	exposed := !config.Loopback(addr)
	scheme := "http"
	if exposed {
		// Reachable from elsewhere: TLS, and the credentials the gRPC
		// calls need (ExposureProblem guarantees they exist).
		vl = tls.NewListener(vl, e.tls)
		scheme = "https"
	}
	vh := d.srv.NewViewer(exposed, server.ViewerStreams(ViewerStreams(e.caps)))
	d.onExit(func() { vh.Close() })
	hs := d.httpServer(vh)
	go func() { _ = hs.Serve(vl) }()
	d.https = append(d.https, hs)
	d.viewer = fmt.Sprintf("%s://%s/", scheme, boundAddress(vl))
	return nil
}

// watchConfig runs the configuration watcher and SIGHUP reloads until
// Serve returns.
func (d *daemon) watchConfig(ctx context.Context) {
	if d.watcher == nil {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.watcher.Run(wctx)
	}()
	stopSignal := d.watcher.ReloadOnSignal(wctx)
	d.onExit(func() {
		stopSignal()
		cancel()
		<-done
	})
}

// announce tells the operator and the scripts waiting for the daemon
// where it serves: stdout, --ready-file and the log.
func (d *daemon) announce(stdout io.Writer, readyFile, addr string) error {
	fmt.Fprintf(stdout, "listening on %s\n", addr)
	if d.viewer != "" {
		fmt.Fprintf(stdout, "viewer on %s\n", d.viewer)
		d.log.Info("viewer", "url", d.viewer)
	}
	if readyFile != "" {
		if err := writeReadyFile(readyFile, addr); err != nil {
			return err
		}
	}
	where := []any{"sessions", d.cfg.Sessions.Root}
	if d.sessions != nil {
		where = []any{"store", d.cfg.Sessions.StoreDisplay()}
	}
	d.log.Info("serving", append(append([]any{"address", addr}, where...), "plugins", len(d.cfg.Plugins))...)
	return nil
}

// shutdown stops gracefully: the server refuses new calls, ends the event
// streams and waits for running operations; then gRPC stops (forcibly
// after server.shutdownTimeout) and the HTTP servers get a second.
func (d *daemon) shutdown() {
	d.log.Info("shutting down", "timeout", d.cfg.Server.ShutdownTimeout)
	// Close refuses new calls, ends the event streams and waits for the
	// running operations; then no handler is left for GracefulStop.
	d.closeServer()
	stopped := make(chan struct{})
	go func() {
		d.grpc.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(d.cfg.Server.ShutdownTimeout):
		d.grpc.Stop()
	}
	for _, hs := range d.https {
		// The viewer's event streams never end on their own: after a
		// second, cut them.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
		cancel()
	}
	d.log.Info("stopped")
}
