// Package gcstart lets a short-lived process allocate a given amount
// before its first garbage collection, then restores the usual pacing.
//
// The Go runtime's minimum heap goal is 4 MB, so a process that starts,
// does a few milliseconds of work and exits — a pith command, a plugin
// started for one command — collects once or twice on the way, while it
// allocates its TLS and HTTP/2 buffers and its first messages; a
// collection costs a millisecond or more of CPU, and its assists slow the
// allocating code. The Go compiler raises its starting heap for the same
// reason (cmd/compile's base.AdjustStartingHeap).
package gcstart

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// Defer turns collection off until the process holds heap bytes (the
// runtime's memory limit triggers the first collection); that first
// collection restores GOGC=100 and no memory limit. GOGC or GOMEMLIMIT
// set in the environment, or a setting the program made before (a plugin
// author's main), leave everything as chosen.
func Defer(heap int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if old := debug.SetGCPercent(-1); old != 100 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		debug.SetGCPercent(old)
		return
	}
	debug.SetMemoryLimit(heap)
	// The sentinel is unreachable from the start: the first collection
	// finds it and runs its finalizer. It holds a pointer so that it is
	// not a tiny allocation, whose finalizer may never run.
	sentinel := &struct{ p *byte }{}
	runtime.SetFinalizer(sentinel, func(*struct{ p *byte }) {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}
