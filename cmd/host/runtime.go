package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/pith-dev/pith/internal/wiring"
)

// runtime is what a one-shot command needs to run an operation the way the
// daemon would: the configuration, and the operation internal/wiring puts
// together (summarizer, plugins, engine) on the session this package
// opens.
type runtime struct {
	cfg      *config.Config
	summName string
	engine   *engine.Session
	op       *wiring.Operation
}

// configPath is --config, else $PITH_CONFIG, else the default location
// when a file is there, else none (the defaults): config.Locate.
func configPath(flag string) string { return config.Locate(flag) }

// cliLogger writes the host's and the plugins' log lines to stderr: warnings
// by default, everything with --verbose.
func cliLogger(w io.Writer, verbose bool) hclog.Logger {
	level := hclog.Warn
	if verbose {
		level = hclog.Debug
	}
	// Plugins' messages and session text reach these lines: escaped, as
	// every terminal output of the CLI (termsafe).
	return hclog.New(&hclog.LoggerOptions{Name: "pith", Level: level, Output: termsafe.NewWriter(w), DisableTime: true})
}

// newRuntime opens the session and starts the configured plugins that may
// handle one of the events the command fires. workspaceDir is --workspace
// (compact), or "". close stops every plugin and closes the file; call it
// on every path.
func newRuntime(ctx context.Context, path, storeURL, cfgPath, workspaceDir string, p providerFlags, fires []hooks.EventID, log hclog.Logger) (*runtime, error) {
	return startRuntime(ctx, path, storeURL, cfgPath, workspaceDir, p, fires, log, func() (*openedSession, error) {
		return openBackend(ctx, storeURL, path, log)
	})
}

// startRuntime is newRuntime with the session opened by open: the file
// or store session to write, or a read-only snapshot (pith propose).
func startRuntime(ctx context.Context, path, storeURL, cfgPath, workspaceDir string, p providerFlags, fires []hooks.EventID, log hclog.Logger, open func() (*openedSession, error)) (*runtime, error) {
	cfg, err := config.Load(configPath(cfgPath))
	if err != nil {
		return nil, err
	}
	opener, err := wiring.Workspaces(cfg, storeURL, path, workspaceDir, log)
	if err != nil {
		return nil, err
	}
	op, err := wiring.StartOperation(ctx, wiring.OperationOptions{
		Config:      cfg,
		Provider:    p.choice(),
		Fires:       fires,
		Workspaces:  opener,
		Logger:      log,
		HostVersion: version,
		Open: func() (session.Backend, func(), error) {
			return openChanging(path, storeURL, open)
		},
	})
	if err != nil {
		return nil, err
	}
	return &runtime{cfg: cfg, summName: op.SummarizerName, engine: op.Engine, op: op}, nil
}

// openChanging opens the session with open for a command that writes it,
// and refuses one it must not write: a file of an old version (migrate it
// first) or a read-only one, said before any summary is paid for.
func openChanging(path, storeURL string, open func() (*openedSession, error)) (session.Backend, func(), error) {
	st, err := open()
	if err != nil {
		return nil, nil, err
	}
	if st.File().Migrated {
		return nil, st.close, fmt.Errorf("%s: %w; %s", path, session.ErrOldVersion, migrateHint(storeURL, path))
	}
	if ro, ok := st.Backend.(interface{ ReadOnly() bool }); ok && ro.ReadOnly() {
		return nil, st.close, fmt.Errorf("%s: %w; %w", path, session.ErrReadOnly, session.ErrUnchanged)
	}
	return st.Backend, st.close, nil
}

// close stops every plugin and closes the session.
func (rt *runtime) close() { rt.op.Close() }
