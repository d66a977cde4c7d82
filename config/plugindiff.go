package config

import (
	"maps"
	"slices"
)

// PluginDiff says how the plugin list changed between two configurations,
// for the reconciler that starts, stops and restarts plugin processes.
// Names are in the order of the list they come from (the new one, except
// Removed).
type PluginDiff struct {
	Added   []string
	Removed []string
	// Restart lists plugins whose process must be replaced: path, args,
	// env, inheritEnv, sha256 or limits changed (the stderr limits belong
	// to the process).
	Restart []string
	// Updated lists plugins whose process can stay: only priority, timeout
	// or failure changed, which apply per call.
	Updated []string
	// Unchanged lists plugins whose entry is the same.
	Unchanged []string
}

// Empty reports whether the plugin set is the same.
func (d PluginDiff) Empty() bool {
	return len(d.Added)+len(d.Removed)+len(d.Restart)+len(d.Updated) == 0
}

// DiffPlugins compares the plugin entries of two configurations by name.
// Either may be nil, meaning no plugins.
func DiffPlugins(old, new *Config) PluginDiff {
	var before, after []Plugin
	if old != nil {
		before = old.Plugins
	}
	if new != nil {
		after = new.Plugins
	}
	byName := make(map[string]Plugin, len(before))
	for _, p := range before {
		byName[p.Name] = p
	}
	var d PluginDiff
	seen := make(map[string]bool, len(after))
	for _, p := range after {
		seen[p.Name] = true
		q, ok := byName[p.Name]
		switch {
		case !ok:
			d.Added = append(d.Added, p.Name)
		case p.Path != q.Path || p.SHA256 != q.SHA256 || !slices.Equal(p.Args, q.Args) || !maps.Equal(p.Env, q.Env) ||
			!slices.Equal(p.InheritEnv, q.InheritEnv) || p.Limits != q.Limits || p.Reattach != q.Reattach:
			d.Restart = append(d.Restart, p.Name)
		case p.Priority != q.Priority || p.Timeout != q.Timeout || p.Failure != q.Failure:
			d.Updated = append(d.Updated, p.Name)
		default:
			d.Unchanged = append(d.Unchanged, p.Name)
		}
	}
	for _, p := range before {
		if !seen[p.Name] {
			d.Removed = append(d.Removed, p.Name)
		}
	}
	return d
}
