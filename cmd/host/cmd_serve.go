package main

import (
	"context"
	"io"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/pith-dev/pith/internal/wiring"
	"github.com/spf13/cobra"
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

With sessions.store set to a postgres:// URL (or PITH_SESSIONS__STORE), the
sessions live in that PostgreSQL database instead, shared by every pith
serve started with it: any host serves any session by the same name, a
session is compacted by one host at a time (a lease of sessions.leaseTTL),
and WatchEvents on any host shows every host's events. The URL's password
is never printed. The store is chosen at start: a reload changing it is
refused.

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

Every listener holds at most server.maxConnections connections, and
server.maxConnectionsPerAddress from one remote address (both derived
from the descriptor limit unless set); past them a connection is closed
at once, and one that has not completed its handshake within
server.handshakeTimeout is dropped.

With server.viewer (or --viewer) set, a read-only web viewer of every
session (under sessions.root, or in sessions.store) is served there ("viewer on URL" is printed),
live, under the same rules: a browser signs in once at /login with a token
(the browser keeps only an opaque sign-in id, which ends after
server.viewerLoginIdle, server.viewerLoginMaxAge or a sign-out), or presents
its client certificate.`,
		Args: positional(nil),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "configuration file, watched for changes (default $PITH_CONFIG, else ~/.config/pith/config.yaml if present; none: the defaults, no reload)")
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
	if !jsonFormat {
		// Text lines reach a terminal as they are: escaped (termsafe).
		// JSON escapes control characters itself.
		w = termsafe.NewWriter(w)
	}
	return hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "pith", Level: level, Output: w, JSONFormat: jsonFormat})
}

// jsonLogs peeks at logging.format before the logger exists; a file that
// does not load is reported by config.Open just after.
func jsonLogs(path string) bool {
	cfg, err := config.Load(path)
	return err == nil && cfg.Logging.Format == "json"
}

// runServe runs the daemon until ctx ends (wiring.Serve), logging to
// stderr.
func runServe(ctx context.Context, stdout, stderr io.Writer, f serveFlags) error {
	path := configPath(f.config)
	return wiring.Serve(ctx, wiring.ServeOptions{
		ConfigPath: path,
		Listen:     f.listen, Metrics: f.metrics, Viewer: f.viewer,
		ReadyFile:   f.readyFile,
		Verbose:     f.verbose,
		Stdout:      stdout,
		Logger:      serveLogger(stderr, f.verbose, jsonLogs(path)),
		HostVersion: version,
		OpenStore:   openStoreURL,
	})
}
