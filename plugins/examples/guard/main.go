// Command guard is an example Pith plugin for session_before_compact: it
// refuses manual and threshold compactions while the session's current path
// carries a "no-compact" label, so a user can pin a delicate stretch of
// history verbatim ("label this entry no-compact") and release it later by
// clearing the label. It never blocks an overflow recovery: cancelling that
// would fail the user's turn, and the label is a preference, not a reason to
// lose the session.
//
// Usage in the host configuration:
//
//	plugins:
//	  - name: guard
//	    path: ./bin/plugins/guard
//	    args: ["--label", "no-compact"]   # the default
//	    priority: 10                       # before any plugin that would compact
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pith-dev/pith/sdk"
)

func main() {
	fs := flag.NewFlagSet("guard", flag.ContinueOnError)
	label := fs.String("label", "no-compact", "label that blocks manual and threshold compaction")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if strings.TrimSpace(*label) == "" {
		fmt.Fprintln(os.Stderr, "guard: --label must not be empty")
		os.Exit(2)
	}
	sdk.ServePlugin(sdk.ServeOpts{BeforeCompact: &guard{label: strings.TrimSpace(*label)}}, sdk.WithName("guard"), sdk.WithVersion("1.0.0"))
}

// guard holds only its configuration; every decision is made from the event.
type guard struct {
	label string
}

// BeforeCompact cancels the compaction when the blocking label is in force.
func (g *guard) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	if ev.Reason == sdk.ReasonOverflow {
		// The context no longer fits: the compaction is the only way the
		// turn can go on, so the guard keeps out of it.
		return nil, nil
	}
	entries := ev.PathEntries
	switch {
	case ev.LabelsTruncated:
		// Even the labels were cut to this plugin's limits: read them
		// from the whole path, so an old label still counts however large
		// the session has grown.
		entries = nil
		err := sdk.ReadPath(ctx, ev.LeafID, 0, func(_ int, e json.RawMessage) error {
			if isLabel(e) {
				entries = append(entries, e)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the path: %w", err)
		}
	case ev.PathTruncated:
		// The path was cut but the labels in force came whole: they
		// decide, without reading a large session.
		entries = nil
	}
	target, ok := g.blockingTarget(entries, ev.Labels)
	if !ok {
		return nil, nil
	}
	sdk.Logger().Info("compaction blocked by label", "session", ev.SessionID, "reason", ev.Reason, "target", target, "label", g.label)
	return &sdk.BeforeCompactResult{
		Cancel:       true,
		CancelReason: fmt.Sprintf("entry %s is labelled %q; clear the label to allow compaction", target, g.label),
	}, nil
}

// blockingTarget returns the entry that carries the blocking label, if any.
//
// A label entry sets the label of its target; a later label entry for the
// same target replaces it, and one with an empty label clears it. The path
// entries are the authority because they include the clearing entries; the
// event's Labels list (the labels in force) is the fallback for hosts that
// send no path.
func (g *guard) blockingTarget(path []json.RawMessage, labels []sdk.Label) (string, bool) {
	current := map[string]string{} // target id → label in force
	var order []string             // targets in first-labelled order, for a stable answer
	set := func(target, label string) {
		if _, seen := current[target]; !seen {
			order = append(order, target)
		}
		current[target] = strings.TrimSpace(label)
	}
	if len(path) > 0 {
		for _, raw := range path {
			if !mayBeLabel(raw) {
				continue // most of the path: messages, decoded for nothing
			}
			var e struct {
				Type     string `json:"type"`
				TargetID string `json:"targetId"`
				Label    string `json:"label"`
			}
			if json.Unmarshal(raw, &e) != nil || e.Type != "label" || e.TargetID == "" {
				continue
			}
			set(e.TargetID, e.Label)
		}
	} else {
		for _, l := range labels {
			set(l.EntryID, l.Label)
		}
	}
	for _, target := range order {
		if current[target] == g.label {
			return target, true
		}
	}
	return "", false
}

// isLabel tells a label entry by a cheap look at its type, so paging a
// huge path keeps only the few entries that matter.
func isLabel(raw json.RawMessage) bool {
	var e struct {
		Type string `json:"type"`
	}
	return mayBeLabel(raw) && json.Unmarshal(raw, &e) == nil && e.Type == "label"
}

// mayBeLabel is false only for an entry that cannot be a label: one
// without the text "label" and without a \u escape, which could spell a
// letter of it ("\u006cabel" decodes to "label"; a veto must not be
// dodged by spelling).
func mayBeLabel(raw json.RawMessage) bool {
	return bytes.Contains(raw, []byte(`"label"`)) || bytes.Contains(raw, []byte(`\u`))
}
