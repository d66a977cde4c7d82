package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/hooks"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// The propose mode (docs/pi.md): another program owns the session file and
// is its only writer (pi, which takes no lock). It hands its compaction
// and tree navigation to Pith, which runs its whole pipeline on the file
// read-only — the same code as a saved compaction up to the commit — and
// returns what would be written; the owner writes it, then tells Pith
// (NotifyCompacted, NotifyTree) so the plugins get session_compact and
// session_tree with what it saved.

// ProposeOptions are the owner's choices for a proposed compaction.
type ProposeOptions struct {
	// Reason is why the owner compacts (manual by default).
	Reason       Reason
	Instructions string
	// LeafID is the owner's leaf, which need not be the file's last
	// entry; "" is the last entry.
	LeafID string
	// FirstKeptEntryID, when set, is the owner's cut, honoured instead of
	// Pith's own preparation (compaction.honourPiCut).
	FirstKeptEntryID string
}

// Proposal is a compaction made to the point where it would be saved.
type Proposal struct {
	Reason           Reason
	Summary          string
	ShortSummary     string
	FirstKeptEntryID string
	TokensBefore     int
	// Details are the compaction entry's details as Pith would store them
	// (the run's reason and plugin timeline included); PreserveData the
	// plugins' session.compacting data for the entry, nil for none.
	Details      json.RawMessage
	PreserveData json.RawMessage
	// FromHook: a plugin supplied the compaction; Plugin names it.
	FromHook bool
	Plugin   string
	// MessagesSummarized counts the messages folded into the summary.
	MessagesSummarized int
	SplitTurn          bool
	Strategy           string
	Explore            *explore.Stats
	Usage              summary.Usage
	// Entries follow the compaction entry, in order: the plugins' injected
	// messages, then the explore worker's auto-read files or the
	// rehydrated ones.
	Entries []ProposedEntry
}

// ProposedEntry is an entry a proposal asks the owner to append after the
// compaction or branch summary, in a form pi's extension API writes:
// a custom_message (pi.sendMessage) or a custom entry (pi.appendEntry).
// Written so, it is read back exactly as the entry Pith writes itself.
type ProposedEntry struct {
	// Type is session.TypeCustomMessage or session.TypeCustom.
	Type       string
	CustomType string
	// Content (a string or content blocks), Display and Details are a
	// custom_message's; Data is a custom entry's.
	Content json.RawMessage
	Display bool
	Details json.RawMessage
	Data    json.RawMessage
}

// proposedEntry is d as the owner writes it; only the entry types its
// extension API can write are accepted.
func proposedEntry(d session.Draft) (ProposedEntry, error) {
	raw, err := json.Marshal(d.Fields)
	if err != nil {
		return ProposedEntry{}, fmt.Errorf("propose: entry %s: %w", d.Type, err)
	}
	f := gjson.ParseBytes(raw)
	opt := func(r gjson.Result) json.RawMessage {
		if !r.Exists() {
			return nil
		}
		return json.RawMessage(r.Raw)
	}
	e := ProposedEntry{Type: d.Type, CustomType: f.Get("customType").Str}
	switch d.Type {
	case session.TypeCustomMessage:
		e.Content, e.Display, e.Details = opt(f.Get("content")), f.Get("display").Bool(), opt(f.Get("details"))
	case session.TypeCustom:
		e.Data = opt(f.Get("data"))
	default:
		return ProposedEntry{}, fmt.Errorf("propose: a %s entry cannot be written by the session's owner", d.Type)
	}
	return e, nil
}

// ProposeCompaction runs the compaction pipeline for the owner of the
// session (session_before_compact, a plugin's compaction,
// session.compacting, the summarizer or the explore worker, the checks)
// and returns what would be saved, writing nothing. A plugin's cancel is
// an error matching ErrCancelled (CancelledBy names the plugin); ctx or
// AbortCompaction abort it with ErrAborted.
func (s *Session) ProposeCompaction(ctx context.Context, opts ProposeOptions) (*Proposal, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if err := s.moveLeaf(opts.LeafID); err != nil {
		return nil, err
	}
	reason := opts.Reason
	if reason == "" {
		reason = ReasonManual
	}
	p := &Proposal{}
	if _, err := s.compactHeld(ctx, s.Settings(), reason, opts.Instructions, runMode{cut: opts.FirstKeptEntryID, propose: p}); err != nil {
		return nil, err
	}
	return p, nil
}

// moveLeaf puts the session at the owner's leaf ("" keeps it) and
// rebuilds the live context from there. The caller holds the operation
// lock.
func (s *Session) moveLeaf(id string) error {
	if id == "" {
		return nil
	}
	if l := s.store.Leaf(); l != nil && l.ID == id {
		return nil
	}
	if err := s.store.SetLeaf(id); err != nil {
		return err
	}
	s.resyncLocked()
	return nil
}

// CancelledBy names the plugin whose cancel err is, and its reason; ok
// false when err is no plugin's cancel.
func CancelledBy(err error) (plugin, reason string, ok bool) {
	var ce *cancelError
	if !errors.As(err, &ce) {
		return "", "", false
	}
	return ce.plugin, ce.reason, true
}

// fillProposal is the proposal's end of pipeline: what persist would
// write, as values.
func (s *Session) fillProposal(p *Proposal, reason Reason, prep *compaction.Preparation, sum *draftSummary, extra []session.Draft) error {
	gen := sum.gen
	draft := compaction.CompactionDraft(gen, sum.supplied != nil, sum.preserve)
	raw, err := json.Marshal(draft.Fields)
	if err != nil {
		return fmt.Errorf("propose: %w", err)
	}
	if d := gjson.GetBytes(raw, "details"); d.Exists() {
		p.Details = json.RawMessage(d.Raw)
	}
	if sum.supplied == nil {
		// The owner marks every compaction its extension answers fromHook
		// (pi does); the mark says Pith's summarizer made this one, so
		// Pith reads it back as its own and carries its file lists.
		if marked, err := sjson.SetBytes(cmpOrObject(p.Details), session.GeneratedByKey, session.GeneratedByPith); err == nil {
			p.Details = marked
		}
	}
	*p = Proposal{
		Reason:             reason,
		Summary:            gen.Summary,
		ShortSummary:       gen.ShortSummary,
		FirstKeptEntryID:   gen.FirstKeptEntryID,
		TokensBefore:       gen.TokensBefore,
		Details:            p.Details,
		PreserveData:       sum.preserve,
		FromHook:           sum.supplied != nil,
		Plugin:             sum.plugin,
		MessagesSummarized: len(prep.MessagesToSummarize) + len(prep.TurnPrefixMessages),
		SplitTurn:          prep.IsSplitTurn() && sum.supplied == nil,
		Usage:              gen.Usage,
		Strategy:           StrategySummary,
	}
	if ex := sum.explored; ex != nil {
		p.Strategy, p.Explore = StrategyExplore, &ex.stats
		s.log.Info(ex.describe())
	}
	for _, d := range extra {
		e, err := proposedEntry(d)
		if err != nil {
			return err
		}
		p.Entries = append(p.Entries, e)
	}
	return nil
}

// cmpOrObject is details, or an empty object for none.
func cmpOrObject(details json.RawMessage) []byte {
	if len(details) == 0 {
		return []byte("{}")
	}
	return details
}

// NotifyCompacted tells the plugins (session_compact) about a compaction
// the owner saved: entry is its line as written, fromExtension whether
// the owner's extension (Pith, through a proposal) supplied it.
func (s *Session) NotifyCompacted(ctx context.Context, entry json.RawMessage, fromExtension bool) error {
	if !handles(s.opts.Hooks, hooks.EventCompact) {
		return nil
	}
	return s.opts.Hooks.Compact(ctx, &hooks.CompactEvent{SessionID: s.sessionID, CompactionEntry: entry, FromExtension: fromExtension})
}

// TreeNotice is a tree navigation the owner made (session_tree).
type TreeNotice struct {
	NewLeafID, OldLeafID string
	// SummaryEntry is the branch_summary line it wrote, nil for none.
	SummaryEntry  json.RawMessage
	FromExtension bool
}

// NotifyTree tells the plugins (session_tree) about a navigation the
// owner made.
func (s *Session) NotifyTree(ctx context.Context, n TreeNotice) error {
	th, ok := s.opts.Hooks.(TreeHooks)
	if !ok || th == nil || !handles(th, hooks.EventTree) {
		return nil
	}
	return th.Tree(ctx, &hooks.TreeEvent{SessionID: s.sessionID, NewLeafID: n.NewLeafID, OldLeafID: n.OldLeafID,
		SummaryEntry: n.SummaryEntry, FromExtension: n.FromExtension})
}
