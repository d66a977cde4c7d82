// Command guard refuses to compact a session whose path carries a
// "no-compact" label, and adds a line of context to every compaction it
// lets through. It is written against the SDK as it was before Serve
// returned an error (value receivers, Serve's result ignored) and must stay
// so: sdk's TestCompatPlugin proves such plugins still build and run.
package main

import (
	"context"

	"github.com/pith-dev/pith/sdk"
)

type guard struct{}

func (guard) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	for _, l := range ev.Labels {
		if l.Label == "no-compact" {
			sdk.Logger().Info("refusing to compact", "session", ev.SessionID, "entry", l.EntryID)
			return &sdk.BeforeCompactResult{Cancel: true, CancelReason: "session is labelled no-compact"}, nil
		}
	}
	return nil, nil // no opinion: the host compacts as usual
}

func (guard) Compacting(ctx context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	return &sdk.CompactingResult{Context: []string{"Keep every decision the user made explicit."}}, nil
}

func main() { sdk.Serve(guard{}, sdk.WithName("guard"), sdk.WithVersion("1.0.0")) }
