package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/transcript"
	"github.com/tidwall/gjson"
)

// Defaults of docs/behaviour.md §11.3 / §14.
const (
	DefaultContextWindow = 128000
	DefaultReserveTokens = 16384
)

// LeafMarkerType is the customType of the custom entry Navigate appends to
// make a navigated leaf survive reopening the file (see the package doc).
const LeafMarkerType = "pith.leaf"

// Sentinel errors callers branch on.
var (
	// ErrUnknownEntry: the navigation target is not an entry of the session.
	ErrUnknownEntry = errors.New("no such entry")
	// ErrCancelled: a session_before_tree hook cancelled the navigation.
	// Nothing was changed.
	ErrCancelled = errors.New("navigation cancelled by a hook")
)

// BeforeTreeEvent is the payload of session_before_tree (docs/behaviour.md §13).
type BeforeTreeEvent struct {
	TargetID  string
	OldLeafID string // "" when the session had no leaf
	// CommonAncestorID is "" when the old and new positions share no entry.
	CommonAncestorID string
	// Entries are the entries of the branch being left, oldest first.
	Entries             []*session.Entry
	UserWantsSummary    bool
	CustomInstructions  string
	ReplaceInstructions bool
	Label               string
}

// SuppliedSummary is a branch summary a hook wrote itself.
type SuppliedSummary struct {
	Summary string
	// Details is stored as the entry's details; nil or empty for none.
	Details json.RawMessage
}

// BeforeTreeResult is what a session_before_tree hook may return. Nil
// pointers leave the navigation's values as they are.
type BeforeTreeResult struct {
	Cancel bool
	// Plugin names who cancelled or supplied the summary; CancelReason is
	// the cancel's reason ("" for none).
	Plugin       string
	CancelReason string
	// Summary is used only when a summary was wanted; it replaces the
	// generated one and is stored with fromHook true.
	Summary             *SuppliedSummary
	CustomInstructions  *string
	ReplaceInstructions *bool
	Label               *string
}

// BeforeTreeHook runs session_before_tree. An error fails the navigation
// and changes nothing (the dispatcher returns one only for a plugin
// configured "failure: closed").
type BeforeTreeHook func(ctx context.Context, ev BeforeTreeEvent) (BeforeTreeResult, error)

// AfterTreeEvent is the payload of session_tree.
type AfterTreeEvent struct {
	NewLeafID string
	OldLeafID string
	// SummaryEntry is the appended branch_summary entry, nil without one.
	SummaryEntry *session.Entry
	// FromExtension is true when a hook supplied the summary.
	FromExtension bool
}

// AfterTreeHook runs session_tree, a notification.
type AfterTreeHook func(ctx context.Context, ev AfterTreeEvent)

// NavigateOptions configure Navigate.
type NavigateOptions struct {
	// Summarize asks for a summary of the branch being left.
	Summarize           bool
	CustomInstructions  string
	ReplaceInstructions bool
	// Label, when non-empty, labels the branch summary entry when one is
	// written, else the target (as pi 0.73.1 does).
	Label string
	// Summarizer writes the summary; required only when one is generated.
	Summarizer summary.Summarizer
	// ContextWindow is the summarizer model's window (default 128 000);
	// ReserveTokens is branchSummary.reserveTokens (default 16 384). The
	// branch gets ContextWindow − ReserveTokens tokens.
	ContextWindow int
	ReserveTokens int
	// SummarizerWindow is the summarizer model's context window (0:
	// unknown); the request, its output cap included, fits it.
	SummarizerWindow int
	// ModelOutputLimit and Reasoning are passed to the summary request.
	ModelOutputLimit int
	Reasoning        string
	BeforeTree       BeforeTreeHook
	AfterTree        AfterTreeHook
	// AnnotateDetails, when set, is given the summary's details (nil for
	// none) just before the entry is written and returns the details to
	// store: the engine adds the run's hook timeline there.
	AnnotateDetails func(details json.RawMessage) json.RawMessage
	// Propose stops the navigation where it would write: the result's
	// Proposed has the summary and label the session's owner is to write
	// (the propose mode: pi navigates and writes; Pith only proposes).
	// Nothing is written, the leaf does not move, AfterTree is not run.
	Propose bool
}

// Proposed is what a proposed navigation would write.
type Proposed struct {
	// Summary is "" when no summary is to be written.
	Summary string
	Details json.RawMessage
	// FromHook: a plugin supplied the summary; Plugin names it.
	FromHook bool
	Plugin   string
	// Label is the label to put on the target ("" for none).
	Label string
	// CustomInstructions and ReplaceInstructions are the instructions the
	// summary was made with, after the plugins changed them.
	CustomInstructions  string
	ReplaceInstructions bool
}

// TokenBudget is the budget the branch is prepared under. It is at least
// 1: a reserve that eats the whole window must not turn into "no limit".
func (o NavigateOptions) TokenBudget() int {
	window, reserve := o.ContextWindow, o.ReserveTokens
	if window <= 0 {
		window = DefaultContextWindow
	}
	if reserve <= 0 {
		reserve = DefaultReserveTokens
	}
	return max(1, window-reserve)
}

// inputBudget is the window the summary request must fit, its output cap
// included: the summarizer model's when known, else the branch window.
func (o NavigateOptions) inputBudget() int {
	window := o.ContextWindow
	if window <= 0 {
		window = DefaultContextWindow
	}
	if o.SummarizerWindow > 0 {
		window = min(window, o.SummarizerWindow)
	}
	return max(1, window)
}

// NavigateResult says what a navigation did.
type NavigateResult struct {
	// NoOp is true when the target was already the leaf; nothing else is set
	// but OldLeafID, NewLeafID and TargetID.
	NoOp      bool
	TargetID  string
	OldLeafID string
	// PositionID is where the conversation now continues from: the target,
	// or its parent for a user message or custom_message ("" = before the
	// first entry).
	PositionID string
	// NewLeafID is the Store's leaf after the navigation: the last entry
	// appended (summary, label or leaf marker), else PositionID.
	NewLeafID        string
	CommonAncestorID string
	// EntriesSummarized is how many entries the branch being left had.
	EntriesSummarized int
	// EditorText is the text of a user message or custom_message target,
	// for the caller to put back in the editor; HasEditorText tells an
	// empty text from none.
	EditorText    string
	HasEditorText bool
	// SummaryEntry is the appended branch_summary entry, or nil. FromHook
	// is true when a hook supplied it.
	SummaryEntry *session.Entry
	FromHook     bool
	// LabelEntry and MarkerEntry are the appended label entry and leaf
	// marker, or nil.
	LabelEntry  *session.Entry
	MarkerEntry *session.Entry
	// Proposed is set by a navigation with NavigateOptions.Propose.
	Proposed *Proposed
}

// Navigate moves the session's leaf to targetID (docs/behaviour.md §11), optionally
// leaving a summary of the branch it leaves, and makes the move durable
// (see the package doc).
//
// Everything that can fail or wait — the hook, the summarizer — runs
// before anything is written, and everything is written with one locked
// append, so a failed, cancelled (ErrCancelled) or aborted (ctx) navigation
// leaves both the leaf and the file as they were.
//
// The Store must not be used by anything else while Navigate runs; the
// engine serializes operations on a session.
func Navigate(ctx context.Context, store session.Backend, targetID string, opts NavigateOptions) (*NavigateResult, error) {
	target := store.Tree().Get(targetID)
	if target == nil {
		return nil, fmt.Errorf("navigate to %q: %w in %s", targetID, ErrUnknownEntry, store.Path())
	}
	res, err := navigate(ctx, store, target, opts)
	if err != nil {
		return nil, fmt.Errorf("navigate to %s: %w", targetID, err)
	}
	return res, nil
}

func navigate(ctx context.Context, store session.Backend, target *session.Entry, opts NavigateOptions) (*NavigateResult, error) {
	tree, targetID := store.Tree(), target.ID
	oldLeafID := ""
	if l := store.Leaf(); l != nil {
		oldLeafID = l.ID
	}
	res := &NavigateResult{TargetID: targetID, OldLeafID: oldLeafID}
	if targetID == oldLeafID {
		res.NoOp, res.NewLeafID, res.PositionID = true, oldLeafID, oldLeafID
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	entries, ancestor := CollectEntriesForBranchSummary(tree, oldLeafID, targetID)
	res.CommonAncestorID, res.EntriesSummarized = ancestor, len(entries)
	st := settings{instructions: opts.CustomInstructions, replace: opts.ReplaceInstructions, label: opts.Label}
	if opts.BeforeTree != nil {
		var err error
		if st, err = runBeforeTree(ctx, opts, BeforeTreeEvent{
			TargetID: targetID, OldLeafID: oldLeafID, CommonAncestorID: ancestor, Entries: entries,
			UserWantsSummary: opts.Summarize, CustomInstructions: st.instructions,
			ReplaceInstructions: st.replace, Label: st.label,
		}, st); err != nil {
			return nil, err
		}
	}
	summary, err := makeSummary(ctx, opts, st, entries, oldLeafID)
	if err != nil {
		return nil, err
	}
	if summary != nil && opts.AnnotateDetails != nil {
		summary.Details = opts.AnnotateDetails(summary.Details)
	}
	res.FromHook = summary != nil && summary.FromHook

	position := targetID
	switch {
	case target.Type == session.TypeMessage && target.Role() == session.RoleUser:
		position = target.ParentID
		res.EditorText, res.HasEditorText = transcript.ContentText(target.Get("message.content"), ""), true
	case target.Type == session.TypeCustomMessage:
		position = target.ParentID
		res.EditorText, res.HasEditorText = transcript.ContentText(target.Get("content"), ""), true
	}
	res.PositionID = position

	if opts.Propose {
		// The propose mode's seam: the navigation is decided; its owner
		// writes it.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := &Proposed{Label: st.label, CustomInstructions: st.instructions, ReplaceInstructions: st.replace}
		if summary != nil {
			p.Summary, p.Details, p.FromHook = summary.Summary, summary.Details, summary.FromHook
			if summary.FromHook {
				p.Plugin = st.plugin
			}
		}
		res.Proposed = p
		return res, nil
	}

	var drafts []session.Draft
	if summary != nil {
		drafts = append(drafts, session.Draft{Type: session.TypeBranchSummary, Fields: summary})
	}
	switch {
	case st.label != "" && summary != nil:
		// On the summary entry, as pi 0.73.1 puts it: the label names
		// what was written for the branch left, below the target.
		label := st.label
		drafts = append(drafts, session.Draft{Type: session.TypeLabel, OfPrevious: func(summaryID string) any {
			return labelFields{TargetID: summaryID, Label: label}
		}})
	case st.label != "":
		// No summary to label: the target, as pi does.
		drafts = append(drafts, session.Draft{Type: session.TypeLabel, Fields: labelFields{TargetID: targetID, Label: st.label}})
	}
	if len(drafts) == 0 && (position == "" || tree.Last().ID != position) {
		// Nothing else will hang from the new position: the marker keeps
		// "last entry = leaf" true for the next load.
		drafts = append(drafts, session.Draft{Type: session.TypeCustom, Fields: markerFields{
			CustomType: LeafMarkerType, Data: markerData{TargetID: targetID, FromID: oldLeafID},
		}})
	}

	// The last point of no return: past it the navigation is committed.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(drafts) == 0 {
		if err := store.SetLeaf(position); err != nil {
			return nil, err
		}
		res.NewLeafID = position
	} else {
		drafts[0].Parent = &position
		appended, err := store.Append(drafts...)
		if err != nil {
			return nil, err
		}
		for _, e := range appended {
			switch e.Type {
			case session.TypeBranchSummary:
				res.SummaryEntry = e
			case session.TypeLabel:
				res.LabelEntry = e
			case session.TypeCustom:
				res.MarkerEntry = e
			}
		}
		res.NewLeafID = appended[len(appended)-1].ID
	}

	if opts.AfterTree != nil {
		opts.AfterTree(ctx, AfterTreeEvent{
			NewLeafID: res.NewLeafID, OldLeafID: oldLeafID,
			SummaryEntry: res.SummaryEntry, FromExtension: res.FromHook,
		})
	}
	return res, nil
}

// settings are the navigation values a session_before_tree hook may change.
type settings struct {
	instructions string
	replace      bool
	label        string
	supplied     *SuppliedSummary
	plugin       string // who supplied it
}

// CancelError is a plugin's cancel of a navigation; it matches
// ErrCancelled.
type CancelError struct{ Plugin, Reason string }

func (e *CancelError) Error() string {
	msg := ErrCancelled.Error()
	if e.Plugin != "" {
		msg += fmt.Sprintf(" (plugin %q)", e.Plugin)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is makes a CancelError match ErrCancelled.
func (e *CancelError) Is(target error) bool { return target == ErrCancelled }

// runBeforeTree emits session_before_tree and applies what it returns.
func runBeforeTree(ctx context.Context, opts NavigateOptions, ev BeforeTreeEvent, st settings) (settings, error) {
	hr, err := opts.BeforeTree(ctx, ev)
	if err != nil {
		return st, fmt.Errorf("session_before_tree: %w", err)
	}
	if hr.Cancel {
		if hr.Plugin == "" && hr.CancelReason == "" {
			return st, ErrCancelled
		}
		return st, &CancelError{Plugin: hr.Plugin, Reason: hr.CancelReason}
	}
	if hr.Summary != nil && opts.Summarize {
		st.supplied, st.plugin = hr.Summary, hr.Plugin
	}
	if hr.CustomInstructions != nil {
		st.instructions = *hr.CustomInstructions
	}
	if hr.ReplaceInstructions != nil {
		st.replace = *hr.ReplaceInstructions
	}
	if hr.Label != nil {
		st.label = *hr.Label
	}
	return st, nil
}

// makeSummary returns the branch_summary entry to write, or nil for none:
// the hook's summary when one was supplied (an empty one means none, as in
// the reference), else a generated one when a summary is wanted and the
// branch has messages.
func makeSummary(ctx context.Context, opts NavigateOptions, st settings, entries []*session.Entry, oldLeafID string) (*branchSummaryFields, error) {
	if st.supplied != nil {
		if strings.TrimSpace(st.supplied.Summary) == "" {
			return nil, nil
		}
		details := st.supplied.Details
		if len(details) == 0 || gjson.ParseBytes(details).Type == gjson.Null {
			details = nil
		} else if !json.Valid(details) {
			return nil, errors.New("session_before_tree: the supplied summary's details are not valid JSON")
		}
		return &branchSummaryFields{FromID: oldLeafID, Summary: st.supplied.Summary, Details: details, FromHook: true}, nil
	}
	if !opts.Summarize || len(entries) == 0 {
		return nil, nil
	}
	p := PrepareBranchEntries(entries, opts.TokenBudget())
	text, details, err := GenerateSummary(ctx, opts.Summarizer, p, SummaryOptions{
		CustomInstructions: st.instructions, ReplaceInstructions: st.replace,
		ModelOutputLimit: opts.ModelOutputLimit, InputBudget: opts.inputBudget(), Reasoning: opts.Reasoning,
	})
	if errors.Is(err, ErrNothingToSummarize) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return nil, err
	}
	return &branchSummaryFields{FromID: oldLeafID, Summary: text, Details: raw}, nil
}

// branchSummaryFields are a branch_summary entry's own fields, in pi's order.
type branchSummaryFields struct {
	FromID   string          `json:"fromId"`
	Summary  string          `json:"summary"`
	Details  json.RawMessage `json:"details,omitempty"`
	FromHook bool            `json:"fromHook"`
}

type labelFields struct {
	TargetID string `json:"targetId"`
	Label    string `json:"label"`
}

type markerFields struct {
	CustomType string     `json:"customType"`
	Data       markerData `json:"data"`
}

type markerData struct {
	TargetID string `json:"targetId"`
	FromID   string `json:"fromId,omitempty"`
}
