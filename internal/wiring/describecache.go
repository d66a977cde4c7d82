package wiring

import (
	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// describedPlugins are the plugins whose configuration lists no events
// and the describe cache's keys for them, by plugin name.
type describedPlugins struct {
	cache *pluginhost.DescribeCache
	keys  map[string]pluginhost.DescribeKey
}

// cachedEvents gives each plugin whose configuration lists no events the
// events its binary said it handles in an earlier Describe, when the
// cache knows them, so that neededPlugins can leave it out of a command
// that fires none of them, as if the configuration listed them. A plugin
// that fails closed keeps its configuration as it is: on the cache's
// word alone its veto is never skipped.
func cachedEvents(specs []pluginhost.Spec, cache *pluginhost.DescribeCache, hostVersion string, log hclog.Logger) ([]pluginhost.Spec, describedPlugins) {
	d := describedPlugins{cache: cache, keys: map[string]pluginhost.DescribeKey{}}
	if cache == nil {
		return specs, d
	}
	for i, sp := range specs {
		if len(sp.Events) > 0 || sp.Failure == hooks.FailureClosed || sp.Reattach != "" {
			continue
		}
		events, key, ok := cache.Lookup(sp, hostVersion)
		d.keys[sp.Name] = key
		if ok {
			log.Debug("plugin's events from an earlier Describe of its binary", "plugin", sp.Name, "events", events)
			specs[i].Events = events
		}
	}
	return specs, d
}

// record stores in the cache what the started plugins described.
func (d describedPlugins) record(started []hooks.Plugin) {
	for _, p := range started {
		sup, ok := p.(*pluginhost.Supervisor)
		if !ok {
			continue
		}
		if key, ok := d.keys[sup.Spec().Name]; ok {
			d.cache.Record(key, sup.Description().Events)
		}
	}
}
