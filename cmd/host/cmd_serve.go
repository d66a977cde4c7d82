package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/server"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

type serveFlags struct {
	config    string
	listen    string
	metrics   string
	viewer    string
	readyFile string
	verbose   bool
}

func newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the session daemon: the SessionService over gRPC for agents",
		Long: `Runs the long-lived host for agents: a gRPC SessionService (proto/pith/session/v1)
over the session files under sessions.root, with the configured plugins and
summarizer, the gRPC health service, and Prometheus metrics on server.metrics.

The configuration file is watched and reloaded on change and on SIGHUP: new
settings apply to the next operation of every open session, plugins are
restarted, added or stopped, and an invalid file (or a plugin that does not
start) is rejected with the previous configuration kept. SIGINT or SIGTERM
stop accepting calls, let running operations finish within
server.shutdownTimeout, stop every plugin and close the files.

The bound address is printed on stdout ("listening on ADDR") and, with
--ready-file, written to that file once the daemon accepts calls.

An address other machines can reach (not loopback, not unix:) is refused
unless server.tls has a certificate and clients authenticate: client
certificates (server.tls.clientCAFile) or bearer tokens (server.tokens,
kept as SHA-256 hashes; make one with "pith serve hash-token"). A unix
socket is created with mode 0600.

With server.viewer (or --viewer) set, a read-only web viewer of every
session under sessions.root is served there ("viewer on URL" is printed),
live, under the same rules: a browser signs in once at /login with a token
(kept in an HttpOnly cookie), or presents its client certificate.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "configuration file, watched for changes (default $PITH_CONFIG; none: the defaults, no reload)")
	fl.StringVar(&f.listen, "listen", "", "address to serve on: host:port or unix:/path (default: server.listen)")
	fl.StringVar(&f.metrics, "metrics", "", "address of the Prometheus /metrics endpoint (default: server.metrics; empty: off)")
	fl.StringVar(&f.viewer, "viewer", "", "address of the read-only web viewer of every session (default: server.viewer; empty: off)")
	fl.StringVar(&f.readyFile, "ready-file", "", "write the bound address to this file once serving")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log at debug level")
	cmd.AddCommand(newHashTokenCommand())
	return cmd
}

// serveLogger is the daemon's logger: unlike the one-shot commands it logs
// at info level (reloads, plugin restarts) unless the configuration says
// otherwise. It intercepts, so the server can count plugin restarts.
// logging.format "json" writes one JSON object a line; it is read once at
// start, as the logger cannot change its format afterwards.
func serveLogger(w io.Writer, verbose, jsonFormat bool) hclog.InterceptLogger {
	level := hclog.Info
	if verbose {
		level = hclog.Debug
	}
	return hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "pith", Level: level, Output: w, JSONFormat: jsonFormat})
}

// jsonLogs peeks at logging.format before the logger exists; a file that
// does not load is reported by config.Open just after.
func jsonLogs(path string) bool {
	cfg, err := config.Load(path)
	return err == nil && cfg.Logging.Format == "json"
}

func runServe(ctx context.Context, stdout, stderr io.Writer, f serveFlags) error {
	log := serveLogger(stderr, f.verbose, jsonLogs(configPath(f.config)))
	var srv *server.Server
	var store *config.Store
	var watcher *config.Watcher
	path := configPath(f.config)
	if path == "" {
		cfg, err := config.Load("")
		if err != nil {
			return err
		}
		store = config.NewStore(cfg)
	} else {
		var err error
		store, watcher, err = config.Open(path, config.WatcherOptions{
			Logger: log.Named("config"),
			// srv is set before the watcher runs.
			OnReload: func(ctx context.Context, old, next *config.Config) error { return srv.PrepareReload(ctx, old, next) },
			Observe:  func(r config.Result) { srv.ObserveReload(r) },
		})
		if err != nil {
			return err
		}
		defer watcher.Close()
	}
	cfg := store.Snapshot()
	if !f.verbose && cfg.Logging.Level != "" {
		log.SetLevel(hclog.LevelFromString(cfg.Logging.Level))
	}

	listen := firstNonEmpty(f.listen, cfg.Server.Listen)
	metricsAddr := firstNonEmpty(f.metrics, cfg.Server.Metrics)
	viewerAddr := firstNonEmpty(f.viewer, cfg.Server.Viewer)
	// The configuration's own addresses were checked when it loaded; the
	// flags are checked here, by the same rule.
	for _, addr := range []string{listen, metricsAddr, viewerAddr} {
		if p := cfg.Server.ExposureProblem(addr); p != "" {
			return errors.New(p)
		}
	}
	var tlsConfig *tls.Config
	if cfg.Server.TLS.Enabled() {
		var err error
		if tlsConfig, err = server.TLSConfig(cfg.Server.TLS); err != nil {
			return err
		}
	}

	var err error
	srv, err = server.New(ctx, server.Options{
		RequireAuth: !config.Loopback(listen),
		ClientCerts: tlsConfig != nil && tlsConfig.ClientCAs != nil,
		Config:      cfg,
		Logger:      log,
		Summarizer: func(c *config.Config) (summary.Summarizer, error) {
			s, _, err := buildSummarizer(c, providerFlags{}, log.Named("summarizer"))
			return s, err
		},
		Settings:    engineSettings,
		PluginSpecs: pluginSpecs,
		HostVersion: version,
	})
	if err != nil {
		return err
	}
	closeServer := func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
		defer cancel()
		if err := srv.Close(sctx); err != nil {
			log.Error("shutdown", "error", err)
		}
	}
	unsubscribe := store.Subscribe(srv.ApplyConfig)
	defer unsubscribe()

	lis, err := listenOn(listen)
	if err != nil {
		closeServer()
		return err
	}
	gopts := srv.GRPCOptions()
	if tlsConfig != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(tlsConfig)))
	}
	g := grpc.NewServer(gopts...)
	srv.Register(g)
	serveErr := make(chan error, 1)
	go func() { serveErr <- g.Serve(lis) }()

	var metricsSrv *http.Server
	if addr := metricsAddr; addr != "" {
		ml, err := listenOn(addr)
		if err != nil {
			g.Stop()
			closeServer()
			return fmt.Errorf("metrics listener: %w", err)
		}
		handler := srv.MetricsHandler()
		scheme := "http"
		if !config.Loopback(addr) {
			// Reachable from elsewhere: the same TLS and credentials as
			// the gRPC calls (ExposureProblem guarantees they exist).
			handler = srv.MetricsAuth(handler)
			ml = tls.NewListener(ml, tlsConfig)
			scheme = "https"
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", handler)
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = metricsSrv.Serve(ml) }()
		log.Info("metrics", "address", scheme+"://"+ml.Addr().String()+"/metrics")
	}

	var viewerSrv *http.Server
	var viewerURL string
	if viewerAddr != "" {
		vl, err := listenOn(viewerAddr)
		if err != nil {
			g.Stop()
			closeServer()
			return fmt.Errorf("viewer listener: %w", err)
		}
		exposed := !config.Loopback(viewerAddr)
		scheme := "http"
		if exposed {
			// Reachable from elsewhere: TLS, and the credentials the gRPC
			// calls need (ExposureProblem guarantees they exist).
			vl = tls.NewListener(vl, tlsConfig)
			scheme = "https"
		}
		vh := srv.NewViewer(exposed)
		defer vh.Close()
		viewerSrv = &http.Server{Handler: vh, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = viewerSrv.Serve(vl) }()
		viewerURL = fmt.Sprintf("%s://%s/", scheme, boundAddress(vl))
	}

	var stopSignal func()
	if watcher != nil {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = watcher.Run(wctx)
		}()
		stopSignal = watcher.ReloadOnSignal(wctx)
		defer func() {
			stopSignal()
			cancel()
			<-done
		}()
	}

	addr := boundAddress(lis)
	fmt.Fprintf(stdout, "listening on %s\n", addr)
	if viewerURL != "" {
		fmt.Fprintf(stdout, "viewer on %s\n", viewerURL)
		log.Info("viewer", "url", viewerURL)
	}
	if f.readyFile != "" {
		if err := writeReadyFile(f.readyFile, addr); err != nil {
			g.Stop()
			closeServer()
			return err
		}
	}
	log.Info("serving", "address", addr, "sessions", cfg.Sessions.Root, "plugins", len(cfg.Plugins))

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		closeServer()
		return fmt.Errorf("serve %s: %w", addr, err)
	}
	log.Info("shutting down", "timeout", cfg.Server.ShutdownTimeout)
	// Close refuses new calls, ends the event streams and waits for the
	// running operations; then no handler is left for GracefulStop.
	closeServer()
	stopped := make(chan struct{})
	go func() {
		g.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(cfg.Server.ShutdownTimeout):
		g.Stop()
	}
	for _, hs := range []*http.Server{metricsSrv, viewerSrv} {
		if hs == nil {
			continue
		}
		// The viewer's event streams never end on their own: after a
		// second, cut them.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
		cancel()
	}
	log.Info("stopped")
	return nil
}

func listenOn(addr string) (net.Listener, error) {
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		// A socket left by a daemon that died is in the way; a live one
		// is not removed (the dial succeeds).
		if c, err := net.Dial("unix", p); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen %s: another daemon is serving there", addr)
		}
		_ = os.Remove(p)
		// The socket is the daemon's door: only its owner may connect.
		// The umask covers the moment between bind and chmod; nothing
		// else creates files while the daemon starts listening.
		var lis net.Listener
		var err error
		withUmask(0o177, func() { lis, err = net.Listen("unix", p) })
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		if err := os.Chmod(p, 0o600); err != nil {
			lis.Close()
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		return lis, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return lis, nil
}

// boundAddress is the address a client dials: host:port, or unix:/path.
func boundAddress(lis net.Listener) string {
	if lis.Addr().Network() == "unix" {
		return "unix:" + lis.Addr().String()
	}
	return lis.Addr().String()
}

// writeReadyFile writes addr atomically, so a poller never reads half.
func writeReadyFile(path, addr string) error {
	err := session.WriteAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, addr+"\n")
		return err
	})
	if err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
