package main

import (
	"context"
	"io"

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
	return loadSessionWith(arg, stderr, opt)
}
