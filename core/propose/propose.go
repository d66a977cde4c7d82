// Package propose is the propose mode's wire form (docs/pi.md): the
// requests of a program that owns a session file and writes it itself (pi,
// through its extension), and the events Pith answers with — progress,
// warnings and one result. `pith propose` reads a request on stdin and
// writes the events as NDJSON; `pith serve` streams the same JSON objects.
// Both run an engine.Session over a read-only snapshot of the file, so the
// pipeline is the one a saved compaction or navigation runs, stopped at
// its commit.
package propose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
)

// Operations, as `pith propose OPERATION` and the RPC name them.
const (
	OpCompact       = "compact"
	OpNavigate      = "navigate"
	OpNotifyCompact = "notify-compact"
	OpNotifyTree    = "notify-tree"
)

// MaxRequestBytes bounds a request: pi's preparation may come whole, with
// its messages, though only a few fields are read.
const MaxRequestBytes = 64 << 20

// Model is the session's model as the owner knows it.
type Model struct {
	Provider      string `json:"provider"`
	ID            string `json:"id"`
	ContextWindow int    `json:"contextWindow"`
	MaxTokens     int    `json:"maxTokens"`
}

// Preparation is what is read of pi's CompactionPreparation; the rest is
// ignored (Pith prepares the compaction itself).
type Preparation struct {
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	TokensBefore     int    `json:"tokensBefore"`
}

// CompactRequest asks for a compaction.
type CompactRequest struct {
	Preparation        Preparation `json:"preparation"`
	LeafID             string      `json:"leafId"`
	CustomInstructions string      `json:"customInstructions"`
	// Reason is manual (default), threshold or overflow.
	Reason string `json:"reason"`
	Model  *Model `json:"model"`
}

// NavigateRequest asks for a tree navigation's branch summary.
type NavigateRequest struct {
	TargetID  string `json:"targetId"`
	OldLeafID string `json:"oldLeafId"`
	// Summarize is pi's userWantsSummary: without it the plugins are
	// still asked (they may cancel or label), but no summary is made.
	Summarize           bool   `json:"summarize"`
	CustomInstructions  string `json:"customInstructions"`
	ReplaceInstructions bool   `json:"replaceInstructions"`
	Label               string `json:"label"`
	Model               *Model `json:"model"`
}

// CompactNotice is a compaction the owner saved.
type CompactNotice struct {
	CompactionEntry json.RawMessage `json:"compactionEntry"`
	FromExtension   bool            `json:"fromExtension"`
}

// TreeNotice is a navigation the owner made.
type TreeNotice struct {
	NewLeafID     string          `json:"newLeafId"`
	OldLeafID     string          `json:"oldLeafId"`
	SummaryEntry  json.RawMessage `json:"summaryEntry"`
	FromExtension bool            `json:"fromExtension"`
}

// Event types.
const (
	TypeProgress = "progress"
	TypeWarning  = "warning"
	TypeResult   = "result"
	TypeError    = "error"
)

// Outcomes of a result.
const (
	OutcomeCompacted  = "compacted"
	OutcomeSummarized = "summarized"
	OutcomeNone       = "none"
	OutcomeNothing    = "nothing"
	OutcomeCancelled  = "cancelled"
	OutcomeNotified   = "notified"
)

// Event is one line of the answer.
type Event struct {
	Type    string `json:"type"`
	Stage   string `json:"stage,omitempty"`
	Message string `json:"message,omitempty"`

	Outcome string `json:"outcome,omitempty"`
	// Reason is why nothing was done, or a cancel's reason; By names the
	// plugin that cancelled.
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"`

	Compaction *Compaction `json:"compaction,omitempty"`
	Summary    *Summary    `json:"summary,omitempty"`
	// Label is a navigation's label for the target, after the plugins.
	Label string `json:"label,omitempty"`
	// Entries follow the compaction entry (or the branch summary).
	Entries []Entry `json:"entries,omitempty"`
	// Plugin names the plugin that supplied the compaction or summary.
	Plugin string `json:"plugin,omitempty"`
	// Strategy (summary or explore) and MessagesSummarized describe a
	// compaction made by Pith.
	Strategy           string `json:"strategy,omitempty"`
	MessagesSummarized int    `json:"messagesSummarized,omitempty"`
	// ShortSummary and PreserveData are what Pith stores beside the
	// summary; pi's compaction entry has no place for them.
	ShortSummary string          `json:"shortSummary,omitempty"`
	PreserveData json.RawMessage `json:"preserveData,omitempty"`
}

// Compaction is the compaction pi writes (session_before_compact's answer).
type Compaction struct {
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int             `json:"tokensBefore"`
	Details          json.RawMessage `json:"details,omitempty"`
}

// Summary is the branch summary pi writes (session_before_tree's answer).
type Summary struct {
	Summary string          `json:"summary"`
	Details json.RawMessage `json:"details,omitempty"`
}

// Entry is an entry for the owner to append, as pi's extension API writes
// it: kind "message" is pi.sendMessage (a custom_message entry), kind
// "custom" is pi.appendEntry (a custom entry, not in the model's context).
type Entry struct {
	Kind       string          `json:"kind"`
	CustomType string          `json:"customType"`
	Content    json.RawMessage `json:"content,omitempty"`
	Display    bool            `json:"display,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// Entry kinds.
const (
	KindMessage = "message"
	KindCustom  = "custom"
)

// Options are the host's side of a proposal.
type Options struct {
	// HonourPiCut keeps from the owner's firstKeptEntryId
	// (compaction.honourPiCut).
	HonourPiCut bool
}

// Decode reads one request of op from data; empty data is the zero
// request. Unknown fields are ignored: pi's objects carry more.
func Decode(op string, data []byte) (any, error) {
	var v any
	switch op {
	case OpCompact:
		v = &CompactRequest{}
	case OpNavigate:
		v = &NavigateRequest{}
	case OpNotifyCompact:
		v = &CompactNotice{}
	case OpNotifyTree:
		v = &TreeNotice{}
	default:
		return nil, fmt.Errorf("unknown propose operation %q (compact, navigate, notify-compact or notify-tree)", op)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return v, nil
	}
	if len(data) > MaxRequestBytes {
		return nil, fmt.Errorf("the %s request is over %d bytes", op, MaxRequestBytes)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("the %s request is not valid: %w", op, err)
	}
	if r, ok := v.(*CompactRequest); ok {
		switch engine.Reason(r.Reason) {
		case "", engine.ReasonManual, engine.ReasonThreshold, engine.ReasonOverflow:
		default:
			return nil, fmt.Errorf("compact: reason must be manual, threshold or overflow, got %q", r.Reason)
		}
	}
	return v, nil
}

// Run performs the decoded request req on s and returns the result
// event; progress and warnings go to emit as they happen (on the
// operation's goroutine). An error is a failure: nothing to propose.
func Run(ctx context.Context, s *engine.Session, req any, opt Options, emit func(Event)) (Event, error) {
	unsubscribe := s.Subscribe(func(ev engine.Event) {
		if e, ok := progressEvent(ev); ok {
			emit(e)
		}
	})
	defer unsubscribe()
	ctx = engine.WithStages(ctx, func(stage string) {
		emit(Event{Type: TypeProgress, Stage: stage, Message: stageMessage(stage)})
	})
	switch r := req.(type) {
	case *CompactRequest:
		return compact(ctx, s, r, opt, emit)
	case *NavigateRequest:
		return navigate(ctx, s, r)
	case *CompactNotice:
		if len(r.CompactionEntry) == 0 {
			return Event{}, errors.New("notify-compact: compactionEntry is missing")
		}
		if err := s.NotifyCompacted(ctx, r.CompactionEntry, r.FromExtension); err != nil {
			emit(Event{Type: TypeWarning, Message: "session_compact: " + err.Error()})
		}
		return Event{Type: TypeResult, Outcome: OutcomeNotified}, nil
	case *TreeNotice:
		if err := s.NotifyTree(ctx, engine.TreeNotice{NewLeafID: r.NewLeafID, OldLeafID: r.OldLeafID,
			SummaryEntry: nullable(r.SummaryEntry), FromExtension: r.FromExtension}); err != nil {
			emit(Event{Type: TypeWarning, Message: "session_tree: " + err.Error()})
		}
		return Event{Type: TypeResult, Outcome: OutcomeNotified}, nil
	}
	return Event{}, fmt.Errorf("propose: unknown request %T", req)
}

// nullable is raw, or nil for JSON null.
func nullable(raw json.RawMessage) json.RawMessage {
	if strings.TrimSpace(string(raw)) == "null" {
		return nil
	}
	return raw
}

func modelWindow(m *Model) int {
	if m == nil {
		return 0
	}
	return max(m.ContextWindow, 0)
}

// withModel is st for the owner's model: its window is the session's
// (the threshold check, and the branch budget).
func withModel(st engine.Settings, m *Model) engine.Settings {
	if m != nil && m.ContextWindow > 0 {
		st.ContextWindow = m.ContextWindow
	}
	return st
}

func compact(ctx context.Context, s *engine.Session, r *CompactRequest, opt Options, emit func(Event)) (Event, error) {
	reason := engine.Reason(r.Reason)
	if reason == "" {
		reason = engine.ReasonManual
	}
	s.SetSettings(withModel(s.Settings(), r.Model))
	po := engine.ProposeOptions{Reason: reason, Instructions: r.CustomInstructions, LeafID: r.LeafID}
	if opt.HonourPiCut {
		po.FirstKeptEntryID = r.Preparation.FirstKeptEntryID
	}
	p, err := s.ProposeCompaction(ctx, po)
	if errors.Is(err, compaction.ErrNothingToCompact) && po.FirstKeptEntryID == "" && r.Preparation.FirstKeptEntryID != "" {
		// Pith's cut keeps everything (a larger keepRecentTokens than
		// pi's), but pi compacts: keeping from pi's cut leaves the work to
		// Pith's pipeline rather than to pi alone.
		emit(Event{Type: TypeWarning, Message: fmt.Sprintf("Pith's own cut leaves nothing to compact (%v); keeping from pi's firstKeptEntryId %s", err, r.Preparation.FirstKeptEntryID)})
		po.FirstKeptEntryID = r.Preparation.FirstKeptEntryID
		p, err = s.ProposeCompaction(ctx, po)
	}
	switch {
	case err == nil:
	case errors.Is(err, engine.ErrCancelled):
		plugin, why, _ := engine.CancelledBy(err)
		return Event{Type: TypeResult, Outcome: OutcomeCancelled, By: plugin, Reason: why}, nil
	case errors.Is(err, compaction.ErrNothingToCompact):
		return Event{Type: TypeResult, Outcome: OutcomeNothing, Reason: err.Error()}, nil
	default:
		return Event{}, err
	}
	out := Event{
		Type: TypeResult, Outcome: OutcomeCompacted,
		Compaction: &Compaction{Summary: p.Summary, FirstKeptEntryID: p.FirstKeptEntryID, TokensBefore: p.TokensBefore, Details: p.Details},
		Plugin:     p.Plugin, Strategy: p.Strategy, MessagesSummarized: p.MessagesSummarized,
		ShortSummary: p.ShortSummary, PreserveData: p.PreserveData,
	}
	if p.FromHook {
		out.Strategy = ""
	}
	for _, e := range p.Entries {
		out.Entries = append(out.Entries, wireEntry(e))
	}
	return out, nil
}

func wireEntry(e engine.ProposedEntry) Entry {
	if e.Type == session.TypeCustom {
		return Entry{Kind: KindCustom, CustomType: e.CustomType, Data: e.Data}
	}
	return Entry{Kind: KindMessage, CustomType: e.CustomType, Content: e.Content, Display: e.Display, Details: e.Details}
}

func navigate(ctx context.Context, s *engine.Session, r *NavigateRequest) (Event, error) {
	if r.TargetID == "" {
		return Event{}, errors.New("navigate: targetId is missing")
	}
	s.SetSettings(withModel(s.Settings(), r.Model))
	mode := engine.SummarizeNever
	if r.Summarize {
		mode = engine.SummarizeAlways
	}
	res, err := s.Navigate(ctx, r.TargetID, engine.NavigateOptions{
		Mode: mode, CustomInstructions: r.CustomInstructions, ReplaceInstructions: r.ReplaceInstructions,
		Label: r.Label, Propose: true, OldLeafID: r.OldLeafID, ModelWindow: modelWindow(r.Model),
	})
	var ce *branch.CancelError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		return Event{Type: TypeResult, Outcome: OutcomeCancelled, By: ce.Plugin, Reason: ce.Reason}, nil
	case errors.Is(err, branch.ErrCancelled):
		return Event{Type: TypeResult, Outcome: OutcomeCancelled}, nil
	default:
		return Event{}, err
	}
	p := res.Proposed
	if p == nil { // the target is the leaf already
		return Event{Type: TypeResult, Outcome: OutcomeNone, Reason: "the target is the current leaf"}, nil
	}
	if p.Summary == "" {
		return Event{Type: TypeResult, Outcome: OutcomeNone, Label: p.Label}, nil
	}
	return Event{Type: TypeResult, Outcome: OutcomeSummarized, Summary: &Summary{Summary: p.Summary, Details: p.Details},
		Label: p.Label, Plugin: p.Plugin}, nil
}

// progressEvent is the wire form of an engine event worth showing, if any.
func progressEvent(ev engine.Event) (Event, bool) {
	switch ev.Kind {
	case engine.EventCompactionProgress:
		if p := ev.Progress; p != nil {
			tools := "no tool"
			if len(p.Tools) > 0 {
				tools = strings.Join(p.Tools, ", ")
			}
			return Event{Type: TypeProgress, Stage: engine.StageExplore,
				Message: fmt.Sprintf("explore: turn %d/%d: %s — ~%d of %d tokens", p.Turn, p.MaxTurns, tools, p.Tokens, p.Max)}, true
		}
	case engine.EventCompactionWarning, engine.EventHookError:
		msg := ev.Error
		if ev.Kind == engine.EventHookError && ev.Plugin != "" && !strings.Contains(msg, ev.Plugin) {
			msg = "plugin " + ev.Plugin + ": " + msg
		}
		return Event{Type: TypeWarning, Message: msg}, true
	}
	return Event{}, false
}

func stageMessage(stage string) string {
	switch stage {
	case engine.StageBeforeCompact:
		return "asking the plugins (session_before_compact)"
	case engine.StageCompacting:
		return "asking the plugins for context (session.compacting)"
	case engine.StageSummarize:
		return "summarizing"
	case engine.StageExplore:
		return "the worker explores the session"
	case engine.StageCheck:
		return "checking the summary"
	case engine.StageBeforeTree:
		return "asking the plugins (session_before_tree)"
	}
	return stage
}
