package wiring

import (
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// PluginSpecs turns the configuration's plugin list into supervisor specs.
func PluginSpecs(cfg *config.Config) []pluginhost.Spec {
	specs := make([]pluginhost.Spec, len(cfg.Plugins))
	for i, p := range cfg.Plugins {
		specs[i] = pluginhost.Spec{
			Name: p.Name, Path: p.Path, Args: p.Args, Env: p.Env, SHA256: p.SHA256,
			Priority: p.Priority, Order: i, Timeout: p.Timeout, Failure: hooks.Failure(p.Failure),
			InheritEnv: p.InheritEnv, Limits: hooks.Limits(p.Limits),
		}
		for _, e := range p.Events {
			specs[i].Events = append(specs[i].Events, hooks.EventID(e))
		}
		specs[i].Reattach = p.Reattach // validated with the configuration
	}
	return specs
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
