package wiring

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/workspace"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// OperationOptions say what one one-shot operation (pith compact,
// navigate, propose) runs with.
type OperationOptions struct {
	// Config is the loaded configuration.
	Config *config.Config
	// Provider is the command line's choice of summarizer.
	Provider Provider
	// Fires are the events the operation fires, in their order: only the
	// plugins that may handle one of them start.
	Fires []hooks.EventID
	// Workspaces opens the session's workspace (Workspaces).
	Workspaces workspace.Opener
	// Open opens the session while the plugins start: on a small session
	// their start is most of the operation's time. It returns the backend
	// and how to release it. On an error the plugins stop, then release
	// (when not nil) is called all the same: a session opened and then
	// refused (a file to migrate) is released after them, as on success.
	Open        func() (session.Backend, func(), error)
	Logger      hclog.Logger
	HostVersion string
	// DescribeCache says which events a plugin binary whose
	// configuration lists none handles, so that one whose events are
	// not fired is not started (nil: the user's, UserDescribeCache).
	DescribeCache *pluginhost.DescribeCache
}

// Operation is what a one-shot command needs to run an operation the way
// the daemon would: the summarizer, the configured plugins behind a
// Dispatcher, and an engine session on the opened backend. Close it on
// every path.
type Operation struct {
	Summarizer summary.Summarizer
	// SummarizerName names the summarizer for the user ("builtin",
	// "openai/gpt-x", "remote URL").
	SummarizerName string
	Backend        session.Backend
	Engine         *engine.Session

	plugins *schedule
	release func()
	// started are the plugins given to the Dispatcher; described
	// records their Describe answers in the cache at Close.
	started   []hooks.Plugin
	described describedPlugins
}

// StartOperation builds the summarizer, starts the configured plugins
// that may handle one of o.Fires, opens the session (o.Open) meanwhile,
// and builds the engine on it. A plugin that does not start is logged and
// left out, unless its failure policy is closed; a plugin binary that
// fails its checksum stops the operation whatever its policy.
func StartOperation(ctx context.Context, o OperationOptions) (*Operation, error) {
	cfg, log := o.Config, o.Logger
	op := &Operation{}
	var err error
	op.Summarizer, op.SummarizerName, err = Summarizer(cfg, o.Provider, log.Named("summarizer"))
	if err != nil {
		return nil, err
	}
	// The plugins start while the session is opened and read. Their host
	// API finds the session once it is open (no plugin is called before).
	opened := &openedLookup{}
	host := &engine.HostAPI{Lookup: opened.lookup, Summarizer: op.Summarizer, Logger: log.Named("plugin"), MaxOutputTokens: cfg.Summarizer.MaxOutputTokens}
	cache := o.DescribeCache
	if cache == nil {
		cache = pluginhost.UserDescribeCache()
	}
	var specs []pluginhost.Spec
	specs, op.described = cachedEvents(PluginSpecs(cfg), cache, o.HostVersion, log)
	specs = neededPlugins(specs, o.Fires, log)
	if len(specs) > 0 {
		op.plugins = newSchedule(pluginhost.Options{Logger: log.Named("plugin"), Host: host, HostVersion: o.HostVersion}, o.Fires, skippable(specs)...)
		if err := op.plugins.launch(ctx, specs); err != nil {
			return nil, err
		}
	}
	op.Backend, op.release, err = o.Open()
	if err != nil {
		op.Backend = nil
		op.Close()
		return nil, err
	}
	opened.set(op.Backend)
	var plugins []hooks.Plugin
	if op.plugins != nil {
		plugins, err = op.plugins.ready()
		if mismatch := pluginhost.Mismatch(err); mismatch != nil {
			// Not a plugin failing but a binary the configuration does
			// not trust: whatever its failure policy, nothing runs.
			op.Close()
			return nil, mismatch
		}
		if err != nil {
			// A plugin that does not start is logged and left out, as at
			// run time; the operation goes on with the others — unless
			// its failure policy is closed: its veto must not be skipped
			// because it could not be asked.
			if name := missingClosed(specs, plugins); name != "" {
				op.Close()
				return nil, fmt.Errorf("plugin %q has failure: closed and did not start; not running without it: %w", name, err)
			}
			// Each failure was logged, in one line, as it happened.
			log.Debug("some plugins did not start", "error", err)
		}
		op.started = plugins
	}
	dispatcher, err := dispatch.NewDispatcher(dispatch.Options{Logger: log.Named("hooks"), Host: host}, plugins...)
	if err != nil {
		op.Close()
		return nil, err
	}
	var hk engine.Hooks = dispatcher
	if op.plugins != nil {
		hk = sequencedHooks{d: dispatcher, q: op.plugins}
	}
	op.Engine = engine.New(op.Backend, engine.Options{
		Settings:   EngineSettings(cfg),
		Summarizer: op.Summarizer,
		Hooks:      hk,
		Workspaces: o.Workspaces,
		Logger:     log.Named("engine"),
	})
	return op, nil
}

// Close stops every plugin, records what the started ones described,
// then releases the session.
func (op *Operation) Close() {
	if op.plugins != nil {
		op.plugins.stop()
		op.described.record(op.started)
	}
	if op.release != nil {
		op.release()
	}
}

// openedLookup is the host API's Lookup for an operation's one session,
// which is opened after the plugins are started: until then it finds
// nothing.
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
