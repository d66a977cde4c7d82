package hooks

import "time"

// Failure is a plugin's failure policy (docs/behaviour.md §13, §14).
type Failure string

const (
	// FailureOpen treats an error, timeout, panic or crash as no result.
	FailureOpen Failure = "open"
	// FailureClosed cancels the operation with an error naming the plugin.
	FailureClosed Failure = "closed"
)

// PluginInfo is how the host's dispatcher orders and bounds a plugin's calls.
type PluginInfo struct {
	// Name is unique among the configured plugins; it namespaces the
	// plugin's preserveData and appears in logs and errors.
	Name string
	// Priority: lower runs first.
	Priority int
	// Order is the position in the configuration; it breaks priority ties.
	Order int
	// Timeout bounds each call; zero means the dispatcher's default.
	Timeout time.Duration
	// Failure is the failure policy; "" means open.
	Failure Failure
	// Limits bound the plugin's results and payloads; zero fields mean
	// the defaults.
	Limits Limits
}

// Plugin is what the host's dispatcher calls: an in-process handler
// (sdk.StartInProcess) or a supervised subprocess (package
// internal/pluginhost). The dispatcher calls an event method only when
// Implements reports true for that event, always with a deadline, and
// tolerates panics and errors. It is part of the contract because the SDK
// hands one out (sdk.StartInProcess, sdktest.Harness) for the host to run.
type Plugin interface {
	Info() PluginInfo
	Implements(event EventID) bool
	BeforeCompactHandler
	CompactingHandler
	CompactHandler
	BeforeTreeHandler
	TreeHandler
}
