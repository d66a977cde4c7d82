// Command my-pith-plugin is a Pith plugin to copy and edit: it keeps the
// host from compacting a session by itself while the session carries a
// label, yet lets the user compact it on purpose, and tells the summarizer
// which files the summarized part changed.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/pith-dev/pith/sdk"
)

// defaultLabel is the label that holds off threshold compactions; the
// plugin's `env` may name another in MANUAL_ONLY_LABEL.
const defaultLabel = "manual-compact-only"

type plugin struct {
	label string
}

// BeforeCompact refuses a threshold compaction while the label is in force
// on the path. A manual one is the user's explicit wish, and an overflow
// compaction is what lets the agent go on at all: both proceed.
func (p plugin) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	if ev.Reason != sdk.ReasonThreshold {
		return nil, nil
	}
	labels := ev.Labels
	if ev.LabelsTruncated {
		// A long session: the event carries only the newest labels, so the
		// verdict must come from the whole path or it would depend on size.
		var err error
		if labels, err = labelsInForce(ctx, ev.LeafID); err != nil {
			return nil, err
		}
	}
	for _, l := range labels {
		if l.Label == p.label {
			sdk.Logger().Info("holding off a threshold compaction", "session", ev.SessionID, "entry", l.EntryID)
			return &sdk.BeforeCompactResult{Cancel: true, CancelReason: "entry " + l.EntryID + " is labelled " + p.label + ": compact it by hand"}, nil
		}
	}
	return nil, nil // no opinion: the host compacts as usual
}

// labelsInForce reads the whole path through the host: a later label entry
// for the same target replaces an earlier one, and an empty one clears it.
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

// Compacting names the files the summarized part changed, so that the
// summary keeps them even when the conversation mentioned them only in
// tool calls.
func (plugin) Compacting(_ context.Context, ev *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	if len(ev.ModifiedFiles) == 0 {
		return nil, nil
	}
	return &sdk.CompactingResult{Context: []string{"Files changed in the summarized part: " + strings.Join(ev.ModifiedFiles, ", ")}}, nil
}

func newPlugin() plugin {
	p := plugin{label: os.Getenv("MANUAL_ONLY_LABEL")}
	if p.label == "" {
		p.label = defaultLabel
	}
	return p
}

func main() {
	p := newPlugin()
	opts := sdk.ServeOpts{BeforeCompact: p, Compacting: p} // one field per event it handles
	if err := sdk.ServePlugin(opts, sdk.WithName("my-pith-plugin"), sdk.WithVersion("0.1.0")); err != nil {
		os.Exit(1) // ServePlugin has logged why
	}
}
