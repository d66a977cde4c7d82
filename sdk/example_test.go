// The plugin of README.md, compiled (not run: it would wait for a host).
// TestReadmePluginIsTheExample keeps the two identical.

package sdk_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/pith-dev/pith/sdk"
)

type guard struct{}

func (guard) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	labels := ev.Labels
	if ev.LabelsTruncated { // a huge session: the event was cut to this plugin's limits
		var err error
		if labels, err = labelsInForce(ctx, ev.LeafID); err != nil {
			return nil, err
		}
	}
	for _, l := range labels {
		if l.Label == "no-compact" {
			sdk.Logger().Info("refusing to compact", "session", ev.SessionID, "entry", l.EntryID)
			return &sdk.BeforeCompactResult{Cancel: true, CancelReason: "entry " + l.EntryID + " is labelled no-compact"}, nil
		}
	}
	return nil, nil // no opinion: the host compacts as usual
}

// labelsInForce pages the whole path through the host: a later label
// entry for the same target replaces an earlier one, an empty one clears it.
func labelsInForce(ctx context.Context, leafID string) ([]sdk.Label, error) {
	inForce := map[string]string{}
	err := sdk.ReadPath(ctx, leafID, 0, func(_ int, raw json.RawMessage) error {
		var e struct{ Type, TargetID, Label string }
		if json.Unmarshal(raw, &e) == nil && e.Type == "label" {
			inForce[e.TargetID] = e.Label
		}
		return nil
	})
	var labels []sdk.Label
	for id, l := range inForce {
		if l != "" {
			labels = append(labels, sdk.Label{EntryID: id, Label: l})
		}
	}
	return labels, err
}

func (guard) Compacting(ctx context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	lines := []string{"Keep every decision the user made explicit."}
	if len(ev.ModifiedFiles) > 0 {
		lines = append(lines, "Files changed in the summarized part: "+strings.Join(ev.ModifiedFiles, ", "))
	}
	return &sdk.CompactingResult{Context: lines}, nil
}

func Example() {
	g := guard{}
	opts := sdk.ServeOpts{BeforeCompact: g, Compacting: g} // one field per event it handles
	if err := sdk.ServePlugin(opts, sdk.WithName("guard"), sdk.WithVersion("1.0.0")); err != nil {
		os.Exit(1) // ServePlugin has logged why
	}
}
