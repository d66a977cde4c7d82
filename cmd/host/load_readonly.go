package main

import (
	"context"
	"io"
	"os"
	"runtime/debug"

	"github.com/pith-dev/pith/core/session"
)

// loadReadOnly is loadFromTo for a command that writes nothing and exits
// (context, a dry run): a session file is mapped instead of read
// (session.LoadOptions.Mapped; internal/mapfile says why that is safe
// for such a command), and opt says what the parse measures. A store
// session is loaded as loadFromTo does.
func loadReadOnly(ctx context.Context, stderr io.Writer, storeURL, arg string, opt session.LoadOptions) (*session.File, *session.Tree, error) {
	if storeURL != "" {
		return loadFromTo(ctx, stderr, storeURL, arg)
	}
	opt.Mapped = true
	if st, err := os.Stat(arg); err == nil {
		deferCollectionFor(st.Size())
	}
	return loadSessionWith(arg, stderr, opt)
}

// deferCollectionFor raises the heap a command may allocate before its
// first collection (startingHeap) by half the size of the session it
// reads. What reading one allocates (entries, the tree, a path) stays
// live until the command exits, a fifth to a third of the file's size, so
// a collection on the way frees next to nothing: on a 300 MB session it
// ran twice, ~6% of a dry run's CPU. Once the first collection has run,
// or GOGC or GOMEMLIMIT chose otherwise, nothing changes.
func deferCollectionFor(size int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if debug.SetMemoryLimit(-1) == startingHeap {
		debug.SetMemoryLimit(startingHeap + size/2)
	}
}
