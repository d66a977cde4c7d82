package hooks

import (
	"errors"
	"fmt"
)

var (
	// ErrPluginFailed is wrapped by the error the host's dispatcher
	// returns when a plugin configured with `failure: closed` errs, times
	// out, panics or crashes; the caller cancels its operation.
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

// ErrPermissionDenied marks a HostAPI call outside the caller's scope: a
// session other than the one of the call being served, or a call made
// after that call ended. pluginhost answers it with gRPC's
// PermissionDenied.
var ErrPermissionDenied = errors.New("permission denied")
