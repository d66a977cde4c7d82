// Command guard refuses to compact a session whose path carries a
// "no-compact" label, and adds a line of context to every compaction it
// lets through. It is written against the SDK as it was before Serve
// returned an error (value receivers, Serve's result ignored) and must stay
// so: sdk's TestCompatPlugin proves such plugins still build and run.
package main

import (
	"context"
	"encoding/json"

	"github.com/pith-dev/pith/sdk"
)

type guard struct{}

func (guard) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	labels := ev.Labels
	if ev.LabelsTruncated {
		// Only the newest labels fit this plugin's limits: read them all
		// from the path, so the verdict does not depend on the session's
		// size.
		var err error
		if labels, err = labelsInForce(ctx, ev.LeafID); err != nil {
			return nil, err
		}
	}
	for _, l := range labels {
		if l.Label == "no-compact" {
			sdk.Logger().Info("refusing to compact", "session", ev.SessionID, "entry", l.EntryID)
			return &sdk.BeforeCompactResult{Cancel: true, CancelReason: "session is labelled no-compact"}, nil
		}
	}
	return nil, nil // no opinion: the host compacts as usual
}

// labelsInForce pages the path for its label entries; a later label of a
// target replaces an earlier one, an empty one clears it.
func labelsInForce(ctx context.Context, leafID string) ([]sdk.Label, error) {
	current := map[string]string{}
	var order []string
	err := sdk.ReadPath(ctx, leafID, 0, func(_ int, raw json.RawMessage) error {
		var e struct {
			Type     string `json:"type"`
			TargetID string `json:"targetId"`
			Label    string `json:"label"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Type != "label" {
			return nil
		}
		if _, seen := current[e.TargetID]; !seen {
			order = append(order, e.TargetID)
		}
		current[e.TargetID] = e.Label
		return nil
	})
	var out []sdk.Label
	for _, t := range order {
		if current[t] != "" {
			out = append(out, sdk.Label{EntryID: t, Label: current[t]})
		}
	}
	return out, err
}

func (guard) Compacting(ctx context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	return &sdk.CompactingResult{Context: []string{"Keep every decision the user made explicit."}}, nil
}

func main() {
	//lint:ignore SA1019 the deprecated form is what this plugin exists to keep working
	sdk.Serve(guard{}, sdk.WithName("guard"), sdk.WithVersion("1.0.0"))
}
