package pluginhost

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/checksum"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/reattach"
)

// Spec is one configured plugin (docs/behaviour.md §14's plugin list entry).
type Spec struct {
	// Name is unique; it namespaces the plugin's preserveData and logs.
	Name string
	// Path is the executable.
	Path string
	Args []string
	// Env is set in the plugin's environment, over anything inherited.
	Env map[string]string
	// InheritEnv names host variables passed on to the plugin beyond
	// BaseEnv; the rest of the host's environment is withheld.
	InheritEnv []string
	// SHA256 is the hex checksum the binary must match; empty skips the check.
	SHA256 string
	// Priority: lower runs first. Order is the position in the config list.
	Priority int
	Order    int
	// Timeout bounds each call; zero means the Dispatcher's default.
	Timeout time.Duration
	Failure hooks.Failure
	// Limits bound the plugin's results, payloads, host calls and stderr;
	// zero fields take the defaults.
	Limits hooks.Limits
	// Events are the events the configuration says the plugin handles;
	// empty when it says nothing. Start compares them with the plugin's
	// Describe answer and logs a difference.
	Events []hooks.EventID
	// Reattach, when set, is a plugin already running in debug mode: the
	// line it printed (PITH_PLUGIN_REATTACH=<json>, or the JSON alone), to
	// attach to instead of starting Path.
	Reattach string
}

// Validate checks what can be checked without starting the plugin.
func (s Spec) Validate() error {
	if s.Name == "" {
		return errors.New("plugin has no name")
	}
	if s.Reattach != "" {
		if _, err := reattach.Parse(s.Reattach); err != nil {
			return fmt.Errorf("plugin %q: %w", s.Name, err)
		}
	}
	if s.Path == "" && s.Reattach == "" {
		return fmt.Errorf("plugin %q has no path", s.Name)
	}
	if s.SHA256 != "" {
		if _, err := checksum.Parse(s.SHA256); err != nil {
			return fmt.Errorf("plugin %q: %w", s.Name, err)
		}
	}
	if _, err := dispatch.ParseFailure(string(s.Failure)); err != nil {
		return fmt.Errorf("plugin %q: %w", s.Name, err)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("plugin %q: negative timeout %s", s.Name, s.Timeout)
	}
	return nil
}

// info is the part of the spec the Dispatcher reads.
func (s Spec) info() hooks.PluginInfo {
	f, _ := dispatch.ParseFailure(string(s.Failure))
	return hooks.PluginInfo{Name: s.Name, Priority: s.Priority, Order: s.Order, Timeout: s.Timeout, Failure: f, Limits: dispatch.LimitsOrDefaults(s.Limits)}
}

// sameProcess reports whether two specs launch the same process, so that a
// configuration change touching only priority, order, timeout or failure
// policy does not restart the plugin. Limits count as the process's: the
// stderr relay and host API server are made with them at start.
func (s Spec) sameProcess(o Spec) bool {
	return s.Name == o.Name && s.Path == o.Path && slices.Equal(s.Args, o.Args) &&
		maps.Equal(s.Env, o.Env) && slices.Equal(s.InheritEnv, o.InheritEnv) && s.SHA256 == o.SHA256 &&
		dispatch.LimitsOrDefaults(s.Limits) == dispatch.LimitsOrDefaults(o.Limits) && s.Reattach == o.Reattach
}

// sameEvents reports whether two event lists hold the same events, in any
// order.
func sameEvents(a, b []hooks.EventID) bool {
	in := func(x []hooks.EventID, e hooks.EventID) bool { return slices.Contains(x, e) }
	for _, e := range a {
		if !in(b, e) {
			return false
		}
	}
	for _, e := range b {
		if !in(a, e) {
			return false
		}
	}
	return true
}
