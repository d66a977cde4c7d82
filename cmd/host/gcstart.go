package main

import "github.com/pith-dev/pith/internal/gcstart"

// startingHeap is how much a pith process allocates before its first
// garbage collection (internal/gcstart): most commands end before they get
// there. With the runtime's 4 MB minimum a demo compaction with four
// plugins collected twice while their connections' buffers were
// allocated, ~10 ms of its ~70 ms of CPU with the assists. A long-running
// `pith serve` gets the usual pacing after its first 64 MB.
const startingHeap = 64 << 20

func deferFirstCollection() { gcstart.Defer(startingHeap) }
