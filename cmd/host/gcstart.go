package main

import (
	"math"
	"os"
	goruntime "runtime"
	"runtime/debug"
)

// startingHeap is how much a pith process allocates before its first
// garbage collection.
const startingHeap = 64 << 20

// deferFirstCollection lets the process allocate startingHeap before it
// collects for the first time, then restores the usual pacing (GOGC=100,
// no memory limit): most commands end before they get there. The Go
// runtime's minimum heap goal is 4 MB, so a command on a small session
// collected once or twice — and, with plugins, while their start allocates
// TLS and HTTP/2 buffers on every connection, which made the collection
// and its assists ~10 ms of CPU of a ~70 ms demo compaction with four
// plugins. The Go compiler does the same for the same reason
// (cmd/compile's base.AdjustStartingHeap). A long-running `pith serve`
// gets the usual pacing after its first 64 MB. GOGC or GOMEMLIMIT set by
// the user leave everything as the user chose.
func deferFirstCollection() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(startingHeap)
	// The sentinel is unreachable from the start: the first collection
	// finds it and runs its finalizer, which restores the usual pacing.
	// (It holds a pointer so that it is not a tiny allocation, whose
	// finalizer may never run.)
	sentinel := &struct{ p *byte }{}
	goruntime.SetFinalizer(sentinel, func(*struct{ p *byte }) {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}
