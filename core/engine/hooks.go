package engine

import (
	"context"
	"encoding/json"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
)

// Hooks is what the engine needs of the hook dispatcher for compaction
// (SPEC §13). *hooks.Dispatcher implements it; tests may supply their own.
// The engine validates a supplied compaction again, so an implementation
// that does not validate is still safe.
type Hooks interface {
	BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent, lim hooks.CompactionLimits) (hooks.BeforeCompactOutcome, error)
	Compacting(ctx context.Context, ev *hooks.CompactingEvent) (hooks.CompactingOutcome, error)
	Compact(ctx context.Context, ev *hooks.CompactEvent) error
}

var _ Hooks = (*hooks.Dispatcher)(nil)

// eventChecker is implemented by dispatchers that can tell whether anyone
// handles an event, so the engine can skip building payloads nobody reads
// (the path of a large session is megabytes of JSON).
type eventChecker interface {
	Has(event hooks.EventID) bool
}

// handles reports whether anyone handles event, when h can say; h is the
// configured Hooks, or its TreeHooks side.
func handles(h any, event hooks.EventID) bool {
	if h == nil {
		return false
	}
	if c, ok := h.(eventChecker); ok {
		return c.Has(event)
	}
	return true
}

func rawMessages(msgs []session.Message) []json.RawMessage {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m.Raw
	}
	return out
}

func hookPreparation(p *compaction.Preparation) hooks.Preparation {
	return hooks.Preparation{
		FirstKeptEntryID:    p.FirstKeptEntryID,
		IsSplitTurn:         p.IsSplitTurn(),
		TokensBefore:        p.TokensBefore,
		MessagesToSummarize: rawMessages(p.MessagesToSummarize),
		TurnPrefixMessages:  rawMessages(p.TurnPrefixMessages),
		PreviousSummary:     p.PreviousSummary,
		ReadFiles:           nonNil(p.ReadFiles),
		ModifiedFiles:       nonNil(p.ModifiedFiles),
		KeepRecentTokens:    p.KeepRecentTokens,
		ReserveTokens:       p.Settings.ReserveTokens,
	}
}

func beforeCompactEvent(sessionID string, path []*session.Entry, p *compaction.Preparation, instructions string, reason Reason) *hooks.BeforeCompactEvent {
	entries := make([]json.RawMessage, len(path))
	var labels []hooks.Label
	for i, e := range path {
		entries[i] = e.Raw
		if e.Type == session.TypeLabel {
			if l := e.Get("label").String(); l != "" {
				labels = append(labels, hooks.Label{EntryID: e.Get("targetId").String(), Label: l})
			}
		}
	}
	return &hooks.BeforeCompactEvent{
		SessionID:          sessionID,
		Preparation:        hookPreparation(p),
		PathEntries:        entries,
		CustomInstructions: instructions,
		Reason:             reason,
		WillRetry:          reason == ReasonOverflow,
		Labels:             labels,
	}
}

// compactionLimits are what a plugin's compaction is checked against: a
// non-empty summary under the cap, and a first kept entry on the path
// within the compacted range (SPEC §13).
func compactionLimits(path []*session.Entry, p *compaction.Preparation, s Settings) hooks.CompactionLimits {
	ids := make([]string, 0, len(path)-p.RangeStart)
	for _, e := range path[p.RangeStart:] {
		if e.ID != "" && e.Type != session.TypeCompaction {
			ids = append(ids, e.ID)
		}
	}
	return hooks.CompactionLimits{MaxSummaryTokens: s.summaryCap(), AllowedFirstKeptIDs: ids}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ObserveHook turns a dispatcher's observation of a failed or rejected
// plugin call into an EventHookError of this Session. A Dispatcher that
// serves only this Session takes it as hooks.Options.Observe, so a plugin
// compaction the Dispatcher rejected (and skipped, letting later plugins
// answer) is still reported to the user. Successful and aborted calls are
// ignored.
func (s *Session) ObserveHook(o hooks.Observation) {
	switch o.Outcome {
	case hooks.OutcomeError, hooks.OutcomeTimeout, hooks.OutcomePanic, hooks.OutcomeRejected:
	default:
		return
	}
	msg := string(o.Event) + ": plugin " + o.Plugin + " " + string(o.Outcome)
	if o.Err != nil {
		msg += ": " + o.Err.Error()
	}
	s.emit(Event{Kind: EventHookError, Plugin: o.Plugin, Error: msg})
}
