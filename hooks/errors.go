package hooks

import (
	"errors"
	"fmt"
)

var (
	// ErrPluginFailed is wrapped by the error a Dispatcher returns when a
	// plugin configured with `failure: closed` errs, times out, panics or
	// crashes; the caller cancels its operation.
	ErrPluginFailed = errors.New("plugin failed")
	// ErrInvalidResult marks a plugin result rejected by validation.
	ErrInvalidResult = errors.New("invalid plugin result")
	// ErrTimeout is the cause of a call that outlived the plugin's timeout.
	ErrTimeout = errors.New("plugin call timed out")
	// ErrPanic is the cause of a handler that panicked.
	ErrPanic = errors.New("plugin handler panicked")
	// ErrInvalidArgument marks a HostAPI call refused for what a plugin
	// sent (JSON nested too deep, …); pluginhost answers it with gRPC's
	// InvalidArgument.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrChecksumMismatch: the plugin's binary does not match its
	// configured sha256, so it is not run. A call failing with it stops
	// the operation whatever the plugin's failure policy: the policy is
	// about a plugin that errs, not about one that is not the binary the
	// configuration trusts (its veto would be dropped unseen).
	ErrChecksumMismatch = errors.New("plugin binary does not match its configured sha256")
)

// PluginError names the plugin and event behind a failure. It matches
// ErrPluginFailed with errors.Is and unwraps to the cause.
type PluginError struct {
	Plugin string
	Event  EventID
	Err    error
}

func (e *PluginError) Error() string {
	return fmt.Sprintf("hook %s: plugin %q failed: %v", e.Event, e.Plugin, e.Err)
}

// Unwrap returns ErrPluginFailed and the cause.
func (e *PluginError) Unwrap() []error { return []error{ErrPluginFailed, e.Err} }
