//go:build !linux

package pluginhost

// memorySocketBase is "" where no directory in memory is known: the
// sockets go under the system's temporary directory (on macOS, TMPDIR is
// already a per-user directory).
func memorySocketBase() string { return "" }
