package wiring

import (
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// TestPluginSpecs: the configuration's plugins become specs in list
// order (Order breaks priority ties), with their events and policy.
func TestPluginSpecs(t *testing.T) {
	cfg := config.Defaults()
	cfg.Plugins = []config.Plugin{
		{Name: "a", Path: "/bin/a", Priority: 5, Failure: "closed", Events: []string{"session_before_compact"}},
		{Name: "b", Path: "/bin/b", Args: []string{"-x"}},
	}
	specs := PluginSpecs(cfg)
	if len(specs) != 2 {
		t.Fatalf("%d specs", len(specs))
	}
	a, b := specs[0], specs[1]
	if a.Name != "a" || a.Order != 0 || a.Priority != 5 || a.Failure != hooks.FailureClosed ||
		!slices.Equal(a.Events, []hooks.EventID{hooks.EventBeforeCompact}) {
		t.Errorf("a: %+v", a)
	}
	if b.Name != "b" || b.Order != 1 || b.Events != nil || !slices.Equal(b.Args, []string{"-x"}) {
		t.Errorf("b: %+v", b)
	}
}

// TestNeededPlugins: a command starts the plugins that list one of its
// events and those that list none; skippable defers session.compacting
// only when some plugin may supply the compaction before it.
func TestNeededPlugins(t *testing.T) {
	specs := []pluginhost.Spec{
		{Name: "tree", Events: []hooks.EventID{hooks.EventTree}},
		{Name: "keeper", Events: []hooks.EventID{hooks.EventCompacting}},
		{Name: "any"},
	}
	var names []string
	for _, sp := range neededPlugins(specs, engine.CompactEvents, hclog.NewNullLogger()) {
		names = append(names, sp.Name)
	}
	if !slices.Equal(names, []string{"keeper", "any"}) {
		t.Errorf("compact starts %v", names)
	}
	if got := skippable(specs[:2]); got != nil {
		t.Errorf("skippable without a before_compact plugin: %v", got)
	}
	if got := skippable(specs); !slices.Equal(got, []hooks.EventID{hooks.EventCompacting}) {
		t.Errorf("skippable with a plugin of unknown events: %v", got)
	}
}
