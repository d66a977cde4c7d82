// The plugin of README.md, compiled (not run: it would wait for a host).
// TestReadmePluginIsTheExample keeps the two identical.

package sdk_test

import (
	"context"
	"os"
	"strings"

	"github.com/pith-dev/pith/sdk"
)

type guard struct{}

func (guard) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	for _, l := range ev.Labels {
		if l.Label == "no-compact" {
			sdk.Logger().Info("refusing to compact", "session", ev.SessionID, "entry", l.EntryID)
			return &sdk.BeforeCompactResult{Cancel: true, CancelReason: "entry " + l.EntryID + " is labelled no-compact"}, nil
		}
	}
	return nil, nil // no opinion: the host compacts as usual
}

func (guard) Compacting(ctx context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	lines := []string{"Keep every decision the user made explicit."}
	if len(ev.ModifiedFiles) > 0 {
		lines = append(lines, "Files changed in the summarized part: "+strings.Join(ev.ModifiedFiles, ", "))
	}
	return &sdk.CompactingResult{Context: lines}, nil
}

func Example() {
	if err := sdk.Serve(guard{}, sdk.WithName("guard"), sdk.WithVersion("1.0.0")); err != nil {
		os.Exit(1) // Serve has logged why
	}
}
