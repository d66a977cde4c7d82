package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/admission"
	"github.com/pith-dev/pith/internal/wiring"
	"github.com/pith-dev/pith/viewer"
	"github.com/spf13/cobra"
)

func newViewCommand() *cobra.Command {
	var listen, cfgPath string
	cmd := &cobra.Command{
		Use:   "view FILE|DIR",
		Short: "Open a read-only web page of a session (or a directory of them) that follows the files live",
		Long: `Serves a read-only page for one session file on a loopback address and prints
its URL: the entry tree, each entry's content, the context a model would see
at any entry drawn to the scale of the context window, and every compaction
and branch summary. The page updates itself when the file changes.

Given a directory (pi keeps its sessions in ~/.pi/agent/sessions, one
directory per project), the page lists every session under it by project
(the cwd each session's header names) and time, newest first; each
session's page follows its file live while pi writes. Only files inside
the directory are read (a link that leads out is not followed), and the
sessions open at once are bounded in number (64) and in bytes (1 GiB, least
recently used closed first).

The page has no authentication, so the address must be a loopback one.
Its connections and live update streams are bounded as pith serve's are
(server.maxConnections, server.maxConnectionsPerAddress,
server.handshakeTimeout).
The window, reserve and threshold come from the configuration (--config or
$PITH_CONFIG or ~/.config/pith/config.yaml; the defaults without one).`,
		Args: positional([]arg{{"FILE", "the session file, or a directory of them"}}),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(configPath(cfgPath))
			if err != nil {
				return err
			}
			log := cliLogger(cmd.ErrOrStderr(), false)
			// Bounded as the daemon's listeners are, by the same keys.
			caps := wiring.ConnCaps(cfg.Server, 1, log)
			ln, err := listenLoopback(listen, caps, log)
			if err != nil {
				return err
			}
			settings := viewer.Settings{
				ContextWindow:  cfg.ContextWindow,
				ReserveTokens:  cfg.Compaction.ReserveTokens,
				AutoCompaction: cfg.Compaction.Enabled,
			}
			var h interface {
				http.Handler
				Close() error
			}
			if st, serr := os.Stat(args[0]); serr == nil && st.IsDir() {
				h, err = viewer.Dir(args[0], viewer.SessionsOptions{Settings: func() viewer.Settings { return settings }, Logger: log, Streams: wiring.ViewerStreams(caps)})
			} else {
				h, err = viewer.New(viewer.Options{Path: args[0], Settings: settings, Logger: log, Streams: wiring.ViewerStreams(caps)})
			}
			if err != nil {
				ln.Close()
				return err
			}
			defer h.Close()
			// server.handshakeTimeout for a connection's first request.
			srv := &http.Server{Handler: h, ReadHeaderTimeout: cfg.Server.HandshakeTimeout, IdleTimeout: wiring.HTTPIdle}
			fmt.Fprintf(cmd.OutOrStdout(), "http://%s/\n", ln.Addr())
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			h.Close() // ends the event streams, so Shutdown does not wait on them
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address to serve the page on (port 0 picks a free one)")
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration file (default $PITH_CONFIG, else ~/.config/pith/config.yaml if present, else the defaults)")
	return cmd
}

// listenLoopback listens on addr, bounded by caps, after checking it is
// a loopback address: the viewer has no authentication of its own.
func listenLoopback(addr string, caps admission.Caps, log hclog.Logger) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Errorf("--listen %q: %w", addr, err)}
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, usageError{fmt.Errorf("--listen %q: pith view serves without authentication, so only a loopback address (127.0.0.1, ::1, localhost) is allowed", addr)}
	}
	ln, err := wiring.ListenLimited(addr, "view", caps, log)
	if err != nil {
		return nil, err // not a nil *Listener in an interface
	}
	return ln, nil
}
