package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/workspace"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/termsafe"
)

// runtime is what a one-shot command needs to run an operation the way the
// daemon would: the configuration, the summarizer, the configured plugins
// behind a Dispatcher, and an engine session on the file.
type runtime struct {
	cfg        *config.Config
	log        hclog.Logger
	summarizer summary.Summarizer
	summName   string
	plugins    *pluginhost.Sequence
	dispatcher *dispatch.Dispatcher
	store      *openedSession
	engine     *engine.Session
}

// configPath is --config, else $PITH_CONFIG, else none (the defaults).
func configPath(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv("PITH_CONFIG")
}

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
	opener, err := workspaces(cfg, storeURL, path, workspaceDir, log)
	if err != nil {
		return nil, err
	}
	rt := &runtime{cfg: cfg, log: log}
	rt.summarizer, rt.summName, err = buildSummarizer(cfg, p, log.Named("summarizer"))
	if err != nil {
		return nil, err
	}
	// The plugins start while the session is opened and read: on a small
	// session their start is most of the command's time. Their host API
	// finds the session once it is open (no plugin is called before).
	opened := &openedLookup{}
	host := &engine.HostAPI{Lookup: opened.lookup, Summarizer: rt.summarizer, Logger: log.Named("plugin"), MaxOutputTokens: cfg.Summarizer.MaxOutputTokens}
	specs := neededPlugins(pluginSpecs(cfg), fires, log)
	if len(specs) > 0 {
		rt.plugins = pluginhost.NewSequence(pluginhost.Options{Logger: log.Named("plugin"), Host: host, HostVersion: version}, fires)
		rt.plugins.OnReach(skippable(specs)...)
		if err := rt.plugins.Launch(ctx, specs); err != nil {
			return nil, err
		}
	}
	rt.store, err = open()
	if err != nil {
		rt.close()
		return nil, err
	}
	if rt.store.File().Migrated {
		rt.close()
		return nil, fmt.Errorf("%s: %w; %s", path, session.ErrOldVersion, migrateHint(storeURL, path))
	}
	if ro, ok := rt.store.Backend.(interface{ ReadOnly() bool }); ok && ro.ReadOnly() {
		// compact and navigate write; say so before any summary is paid for.
		rt.close()
		return nil, fmt.Errorf("%s: %w; %w", path, session.ErrReadOnly, session.ErrUnchanged)
	}
	opened.set(rt.store.Backend)
	var plugins []hooks.Plugin
	if rt.plugins != nil {
		plugins, err = rt.plugins.Ready()
		if mismatch := pluginhost.Mismatch(err); mismatch != nil {
			// Not a plugin failing but a binary the configuration does
			// not trust: whatever its failure policy, nothing runs.
			rt.close()
			return nil, mismatch
		}
		if err != nil {
			// A plugin that does not start is logged and left out, as at
			// run time; the operation goes on with the others — unless
			// its failure policy is closed: its veto must not be skipped
			// because it could not be asked.
			if name := missingClosed(specs, plugins); name != "" {
				rt.close()
				return nil, fmt.Errorf("plugin %q has failure: closed and did not start; not running without it: %w", name, err)
			}
			// Each failure was logged, in one line, as it happened.
			log.Debug("some plugins did not start", "error", err)
		}
	}
	rt.dispatcher, err = dispatch.NewDispatcher(dispatch.Options{Logger: log.Named("hooks"), Host: host}, plugins...)
	if err != nil {
		rt.close()
		return nil, err
	}
	var hk engine.Hooks = rt.dispatcher
	if rt.plugins != nil {
		hk = sequencedHooks{d: rt.dispatcher, q: rt.plugins}
	}
	settings := engineSettings(cfg)
	rt.engine = engine.New(rt.store.Backend, engine.Options{
		Settings:       settings,
		Summarizer:     rt.summarizer,
		AutoSummarizer: rt.summarizer,
		Hooks:          hk,
		Workspaces:     opener,
		Logger:         log.Named("engine"),
	})
	return rt, nil
}

// missingClosed names a plugin of specs with failure: closed that is not
// among the started ones, or returns "".
func missingClosed(specs []pluginhost.Spec, started []hooks.Plugin) string {
	running := map[string]bool{}
	for _, p := range started {
		running[p.Info().Name] = true
	}
	for _, sp := range specs {
		if sp.Failure == hooks.FailureClosed && !running[sp.Name] {
			return sp.Name
		}
	}
	return ""
}

// neededPlugins keeps the plugins a command may call: those whose
// configuration lists one of the events it fires, and those that list
// none (only their Describe answer says what they handle). A plugin left
// out cannot be called, so even a failure: closed one is not needed.
func neededPlugins(specs []pluginhost.Spec, fires []hooks.EventID, log hclog.Logger) []pluginhost.Spec {
	var out []pluginhost.Spec
	for _, sp := range specs {
		if len(sp.Events) == 0 || slices.ContainsFunc(sp.Events, func(e hooks.EventID) bool { return slices.Contains(fires, e) }) {
			out = append(out, sp)
			continue
		}
		log.Debug("plugin not started: its configured events are not fired by this command", "plugin", sp.Name, "events", sp.Events)
	}
	return out
}

// openedLookup is the host API's Lookup for a command's one session, which
// is opened after the plugins are started: until then it finds nothing.
type openedLookup struct {
	backend atomic.Pointer[session.Backend]
}

func (o *openedLookup) set(b session.Backend) { o.backend.Store(&b) }

func (o *openedLookup) lookup(id string) (session.Backend, bool) {
	b := o.backend.Load()
	if b == nil {
		return nil, false
	}
	return engine.SingleSession(*b)(id)
}

func (rt *runtime) close() {
	if rt.plugins != nil {
		rt.plugins.Stop()
	}
	if rt.store != nil {
		rt.store.close()
	}
}

func engineSettings(cfg *config.Config) engine.Settings {
	s := engine.DefaultSettings()
	s.Enabled = cfg.Compaction.Enabled
	s.ReserveTokens = cfg.Compaction.ReserveTokens
	s.KeepRecentTokens = cfg.Compaction.KeepRecentTokens
	s.CalibrateKeepRecent = cfg.Compaction.CalibrateKeepRecent
	s.CalibrationMethod = cfg.Compaction.CalibrationMethod
	s.AutoContinue = cfg.Compaction.AutoContinue
	s.ContextWindow = cfg.ContextWindow
	s.SummarizerContextWindow = cfg.SummarizerContextWindow()
	s.SummarizerOutputLimit = cfg.Summarizer.MaxOutputTokens
	s.Pruning = engine.Pruning{Enabled: cfg.Pruning.Enabled, PruneSettings: compaction.PruneSettings{
		Protect:        cfg.Pruning.ProtectTokens,
		Minimum:        cfg.Pruning.MinimumSavings,
		ProtectedTools: cfg.Pruning.ProtectedTools,
		Thinking:       cfg.Pruning.Thinking,
	}}
	s.BranchSummary = engine.BranchSummary{
		Enabled:       cfg.BranchSummary.Enabled,
		ContextWindow: cfg.BranchSummary.ContextWindow,
		ReserveTokens: cfg.BranchSummary.ReserveTokens,
	}
	s.ShortSummary = cfg.Compaction.ShortSummary
	rh := cfg.Compaction.Rehydrate
	s.Rehydrate = engine.Rehydrate{Files: rh.Files, MaxTokensPerFile: rh.MaxTokensPerFile, TotalTokens: rh.TotalTokens}
	c := &cfg.Compaction
	s.Explore = engine.ExploreSettings{
		Enabled:        c.Strategy == config.StrategyExplore,
		RetainedTokens: c.RetainedTokens,
		Budgets: explore.Budgets{
			OverviewTarget: c.OverviewTargetTokens, OverviewWarning: c.OverviewWarningTokens, OverviewDeadline: c.OverviewDeadlineTokens,
			WorkerContextMax: c.WorkerContextMaxTokens, FinishWarningRemaining: c.FinishWarningRemainingTokens, FinalReserve: c.FinalReserveTokens,
			MaxTurns:      c.WorkerMaxTurns,
			SummaryTarget: c.SummaryTargetTokens, SummaryMax: c.SummaryMaxTokens,
			AutoReadBudget:   c.AutoReadBudgetTokens,
			ResultContextMax: c.ResultContextMaxTokens,
		},
	}
	return s
}

// workspaces is how a command opens the workspace of the session named
// name, every read held to the configured deny list. A session in a
// shared store, or a file under sessions.root, may have been created by
// any client of a daemon, which chose its cwd, so it is confined as in
// the daemon (config.Server.WorkspaceRootFor). A session file of the
// user's own is read only when its workspace is the current directory or
// below it, or below workspaceDir (--workspace) or a workspace.roots
// directory: a session written elsewhere, or by pi started in the home
// directory, names any directory, and a model steered by its text would
// read it. A workspace outside them is not read, with one warning line.
func workspaces(cfg *config.Config, storeURL, name, workspaceDir string, log hclog.Logger) (workspace.Opener, error) {
	deny, err := cfg.Workspace.DenyList()
	if err != nil {
		return nil, err
	}
	confined := func(root string) (workspace.Opener, error) {
		if workspaceDir != "" {
			return nil, errors.New("--workspace is for a session file of your own; this session's workspace is read only under server.workspaceRoot, as in the daemon")
		}
		return workspace.Within(root).Denying(deny), nil
	}
	if storeURL != "" {
		return confined(cfg.Server.WorkspaceRootFor(name))
	}
	if rel, ok := underRoot(cfg.Sessions.Root, name); ok {
		return confined(cfg.Server.WorkspaceRootFor(rel))
	}
	if workspaceDir != "" {
		abs, err := filepath.Abs(workspaceDir)
		if err != nil {
			return nil, fmt.Errorf("--workspace: %w", err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--workspace %s: not a directory", workspaceDir)
		}
		workspaceDir = abs
	}
	cur, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("the current directory: %w", err)
	}
	open := workspace.Under(cfg.Workspace.LocalRoots(cur, workspaceDir)...).Denying(deny)
	var warned sync.Once
	return func(cwd string, opts workspace.Options) (*workspace.Workspace, error) {
		ws, err := open(cwd, opts)
		// The engine asks once per use (the worker, rehydrate, the
		// plugins' event); the user is told once.
		if nc := (*workspace.NotChosenError)(nil); errors.As(err, &nc) {
			warned.Do(func() {
				log.Warn("the session's workspace is outside the current directory: none of its files is read (the explore worker's file tools are off, rehydrate reads nothing, plugins are told of no workspace); run from it, or pass --workspace DIR or list it in workspace.roots to read it", "workspace", nc.Cwd)
			})
		}
		return ws, err
	}, nil
}

// underRoot is path relative to root (slash-separated) when path names a
// file below root, by its absolute path with links resolved on both
// sides.
func underRoot(root, path string) (string, bool) {
	if root == "" {
		return "", false
	}
	real := func(p string) string {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return p
	}
	rel, err := filepath.Rel(real(root), real(path))
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
