package engine

import (
	"context"
	"encoding/json"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// Hooks is what the engine needs of the hook dispatcher for compaction
// (docs/behaviour.md §13). *dispatch.Dispatcher implements it; tests may supply their own.
// The engine validates a supplied compaction again, so an implementation
// that does not validate is still safe.
type Hooks interface {
	BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent, lim hooks.CompactionLimits) (hooks.BeforeCompactOutcome, error)
	Compacting(ctx context.Context, ev *hooks.CompactingEvent) (hooks.CompactingOutcome, error)
	Compact(ctx context.Context, ev *hooks.CompactEvent) error
}

var _ Hooks = (*dispatch.Dispatcher)(nil)

// The hook events each operation may fire, so a one-shot caller can start
// only the plugins that would be called.
var (
	CompactEvents  = []hooks.EventID{hooks.EventBeforeCompact, hooks.EventCompacting, hooks.EventCompact}
	NavigateEvents = []hooks.EventID{hooks.EventBeforeTree, hooks.EventTree}
)

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
		RangeStart:          p.RangeStart,
	}
}

// beforeCompactEvent builds the session_before_compact payload. No entry
// travels twice: an entry whose message is in the preparation's messages
// is left out of PathEntries (the path can always be read whole through
// the host API). The Dispatcher cuts PathEntries, Labels and the
// preparation's messages to each plugin's limits, starting from the last
// compaction when it must; a plugin pages what was cut through the host
// API, so no verdict depends on the session's size.
func beforeCompactEvent(sessionID string, path []*session.Entry, p *compaction.Preparation, instructions string, reason Reason) *hooks.BeforeCompactEvent {
	sent := make(map[string]bool, len(p.MessagesToSummarize)+len(p.TurnPrefixMessages))
	for _, m := range p.MessagesToSummarize {
		sent[m.EntryID] = true
	}
	for _, m := range p.TurnPrefixMessages {
		sent[m.EntryID] = true
	}
	entries := make([]json.RawMessage, 0, len(path)-len(sent))
	since := 0
	inForce := map[string]string{} // target → its label, "" when cleared
	var targets []string           // in first-labelled order
	for _, e := range path {
		if e.Type == session.TypeLabel {
			target := e.Get("targetId").String()
			if _, seen := inForce[target]; !seen {
				targets = append(targets, target)
			}
			inForce[target] = e.Get("label").String()
		}
		if e.ID != "" && sent[e.ID] {
			continue
		}
		if e.Type == session.TypeCompaction {
			since = len(entries)
		}
		entries = append(entries, e.Raw)
	}
	var labels []hooks.Label
	for _, t := range targets {
		if l := inForce[t]; l != "" {
			labels = append(labels, hooks.Label{EntryID: t, Label: l})
		}
	}
	leaf := ""
	if len(path) > 0 {
		leaf = path[len(path)-1].ID
	}
	return &hooks.BeforeCompactEvent{
		SessionID:           sessionID,
		Preparation:         hookPreparation(p),
		PathEntries:         entries,
		CustomInstructions:  instructions,
		Reason:              reason,
		WillRetry:           reason == ReasonOverflow,
		Labels:              labels,
		LeafID:              leaf,
		PathLength:          len(path),
		PathSinceCompaction: since,
	}
}

// compactionLimits are what a plugin's compaction is checked against: a
// non-empty summary under the cap, and a first kept entry on the path
// within the compacted range (docs/behaviour.md §13).
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
// serves only this Session takes it as dispatch.Options.Observe, so a plugin
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
