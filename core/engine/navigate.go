package engine

import (
	"cmp"
	"context"
	"encoding/json"

	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// TreeHooks is what navigation needs of the hook dispatcher;
// *dispatch.Dispatcher has it.
type TreeHooks interface {
	BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent, lim hooks.SummaryLimits) (hooks.BeforeTreeOutcome, error)
	Tree(ctx context.Context, ev *hooks.TreeEvent) error
}

var _ TreeHooks = (*dispatch.Dispatcher)(nil)

// NavigateOptions are the caller's choices for one navigation; the
// summarizer, budgets and hooks come from the Session.
type NavigateOptions struct {
	// Summarize true asks for a summary of the abandoned branch whatever
	// the settings say; false leaves the choice to Mode.
	Summarize           bool
	CustomInstructions  string
	ReplaceInstructions bool
	Label               string
	// ContextWindow and ReserveTokens give the branch budget (docs/behaviour.md §11.3)
	// when the session's model is not known; zero takes the settings'
	// (branchSummary.*), else branch's defaults (128 000 − 16 384).
	ContextWindow int
	ReserveTokens int
	// ModelWindow is the session model's context window when the caller
	// knows it (pi says which model it runs). See BranchWindow.
	ModelWindow int
	// Mode decides whether to summarize when Summarize is false: by
	// default branchSummary.enabled does.
	Mode SummarizeMode
	// Propose runs the navigation for the session's owner (docs/pi.md):
	// from its leaf OldLeafID ("" keeps the session's), the plugins are
	// asked and the summary is made, and the result's Proposed says what
	// the owner is to write; nothing is written and the leaf stays.
	Propose   bool
	OldLeafID string
}

// SummarizeMode is the caller's choice about a branch summary.
type SummarizeMode int

const (
	// SummarizeDefault: Settings.BranchSummary.Enabled decides.
	SummarizeDefault SummarizeMode = iota
	// SummarizeAlways: summarize (--summarize).
	SummarizeAlways
	// SummarizeNever: do not summarize (--no-summarize).
	SummarizeNever
)

// wantsSummary resolves the caller's choice against the settings.
func (o NavigateOptions) wantsSummary(st Settings) bool {
	switch {
	case o.Summarize || o.Mode == SummarizeAlways:
		return true
	case o.Mode == SummarizeNever:
		return false
	}
	return st.BranchSummary.Enabled
}

// Navigate moves the leaf to targetID (docs/behaviour.md §11) with session_before_tree
// and session_tree delivered to the plugins, then rebuilds the live
// context from the new leaf. AbortCompaction or ctx cancels it; a cancelled
// navigation leaves the leaf and the file unchanged.
func (s *Session) Navigate(ctx context.Context, targetID string, opts NavigateOptions) (*branch.NavigateResult, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if opts.Propose {
		if err := s.moveLeaf(opts.OldLeafID); err != nil {
			return nil, err
		}
	}
	tl := &dispatch.Timeline{}
	r := s.startRun(dispatch.WithObserver(ctx, tl.Observe))
	defer s.endRun(r)
	st := s.Settings()
	nav := branch.NavigateOptions{
		Propose:             opts.Propose,
		ReplaceInstructions: opts.ReplaceInstructions,
		// The branch summary records the plugin calls of its run, as a
		// compaction does.
		AnnotateDetails: func(d json.RawMessage) json.RawMessage {
			return annotateDetails(d, "", timelineJSON(tl.Steps()))
		},
		Summarize:          opts.wantsSummary(st),
		CustomInstructions: opts.CustomInstructions,
		Label:              opts.Label,
		Summarizer:         s.opts.Summarizer,
		ContextWindow:      BranchWindow(st, opts.ModelWindow, opts.ContextWindow, s.modelKnown()),
		ReserveTokens:      cmp.Or(opts.ReserveTokens, st.BranchSummary.ReserveTokens),
		SummarizerWindow:   st.SummarizerContextWindow,
		ModelOutputLimit:   st.SummarizerOutputLimit,
		Reasoning:          st.Reasoning,
	}
	if th, ok := s.opts.Hooks.(TreeHooks); ok && th != nil {
		nav.BeforeTree = s.beforeTreeHook(th)
		nav.AfterTree = s.afterTreeHook(th)
	}
	res, err := branch.Navigate(r.ctx, s.store, targetID, nav)
	if err != nil {
		return nil, err
	}
	if opts.Propose {
		return res, nil
	}
	lc := buildLive(s.store.Tree(), s.store.Leaf())
	s.mu.Lock()
	s.live = lc
	s.mu.Unlock()
	return res, nil
}

func (s *Session) beforeTreeHook(th TreeHooks) branch.BeforeTreeHook {
	return func(ctx context.Context, ev branch.BeforeTreeEvent) (branch.BeforeTreeResult, error) {
		var out branch.BeforeTreeResult
		if !handles(th, hooks.EventBeforeTree) {
			return out, nil
		}
		stage(ctx, StageBeforeTree)
		entries := make([]json.RawMessage, len(ev.Entries))
		for i, e := range ev.Entries {
			entries[i] = e.Raw
		}
		oc, err := th.BeforeTree(ctx, &hooks.BeforeTreeEvent{
			SessionID: s.sessionID, TargetID: ev.TargetID, OldLeafID: ev.OldLeafID, CommonAncestorID: ev.CommonAncestorID,
			EntriesToSummarize: entries, UserWantsSummary: ev.UserWantsSummary,
			CustomInstructions: ev.CustomInstructions, ReplaceInstructions: ev.ReplaceInstructions, Label: ev.Label,
		}, hooks.SummaryLimits{MaxSummaryTokens: branch.SummaryMaxTokens})
		if err != nil {
			return out, err
		}
		out.Cancel, out.Plugin, out.CancelReason = oc.Cancelled, oc.Plugin, oc.CancelReason
		if oc.Summary != nil {
			out.Summary = &branch.SuppliedSummary{Summary: oc.Summary.Summary, Details: oc.Summary.Details}
		}
		if oc.CustomInstructions != "" {
			out.CustomInstructions = &oc.CustomInstructions
			out.ReplaceInstructions = &oc.ReplaceInstructions
		}
		if oc.Label != "" {
			out.Label = &oc.Label
		}
		return out, nil
	}
}

func (s *Session) afterTreeHook(th TreeHooks) branch.AfterTreeHook {
	return func(ctx context.Context, ev branch.AfterTreeEvent) {
		if !handles(th, hooks.EventTree) {
			return
		}
		tev := &hooks.TreeEvent{SessionID: s.sessionID, NewLeafID: ev.NewLeafID, OldLeafID: ev.OldLeafID, FromExtension: ev.FromExtension}
		if ev.SummaryEntry != nil {
			tev.SummaryEntry = ev.SummaryEntry.Raw
		}
		if err := th.Tree(context.WithoutCancel(ctx), tev); err != nil {
			s.log.Warn("session_tree: a plugin failed", "error", err)
		}
	}
}

// BranchWindow is the window the branch budget is taken from (the budget
// is it minus branchSummary.reserveTokens), as pi computes it: the
// session model's. That is modelWindow when the caller knows it (pi's
// model), else the configured contextWindow — the session model's window
// — when the session names a model; branchSummary.contextWindow (or
// window, a caller's own) stands in for a session whose model is unknown.
func BranchWindow(st Settings, modelWindow, window int, modelKnown bool) int {
	switch {
	case modelWindow > 0:
		return modelWindow
	case modelKnown && st.ContextWindow > 0:
		return st.ContextWindow
	}
	return cmp.Or(window, st.BranchSummary.ContextWindow)
}

// modelKnown reports whether the session names its model at the leaf (a
// model_change or an assistant message on its path).
func (s *Session) modelKnown() bool {
	m := s.store.Tree().Settings(s.store.Leaf())
	return m.Provider != "" || m.Model != ""
}
