package engine

import (
	"context"
	"sync"
	"time"

	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/hooks"
)

// Reason says why a compaction runs (docs/behaviour.md §9); the values are those of the
// hook payloads.
type Reason = hooks.Reason

// Compaction reasons.
const (
	ReasonManual    = hooks.ReasonManual
	ReasonThreshold = hooks.ReasonThreshold
	ReasonOverflow  = hooks.ReasonOverflow
)

// EventKind classifies an Event.
type EventKind string

// Event kinds.
const (
	// EventCompactionStart: a compaction began (every reason).
	EventCompactionStart EventKind = "compaction_start"
	// EventCompactionEnd: it ended — saved, failed, aborted or cancelled.
	EventCompactionEnd EventKind = "compaction_end"
	// EventHookError: a plugin failed or its result was rejected; Plugin
	// and Error say which and why.
	EventHookError EventKind = "hook_error"
	// EventOverflowReported: an overflow that was not (or no longer)
	// compacted away; Error says why.
	EventOverflowReported EventKind = "overflow_reported"
	// EventAutoCompactionDisabled: the failure guard turned automatic
	// compaction off until the next successful manual compaction.
	EventAutoCompactionDisabled EventKind = "auto_compaction_disabled"
	// EventPruned: old tool outputs were replaced by a notice at a turn
	// end (docs/behaviour.md §8); TokensBefore and TokensAfter are the context tokens
	// around it, Pruned counts the outputs. With Error set, automatic
	// pruning failed and the session is unchanged.
	EventPruned EventKind = "pruned"
	// EventAgentAbort: a manual compaction is starting, and the agent's
	// in-flight turn must stop (docs/behaviour.md §9.1): Options.AbortAgent is called
	// for an agent in the same process; an agent elsewhere (pith serve)
	// gets this event and cancels its model request and tools.
	EventAgentAbort EventKind = "agent_abort"
	// EventCompactionWarning: a compaction goes on past a mark people
	// should know about (the explore strategy's overview over its warning
	// size, the worker's budget running low). Error carries the warning:
	// it is the event's one free-text field on the wire.
	EventCompactionWarning EventKind = "compaction_warning"
	// EventCompactionProgress: the explore strategy's worker finished a
	// turn; Progress has the figures.
	EventCompactionProgress EventKind = "compaction_progress"
)

// The steps of a compaction WithStages reports, in order; the
// plugin steps only when a plugin handles them, one of summarize and
// explore.
const (
	StageBeforeCompact = "session_before_compact"
	StageCompacting    = "session.compacting"
	StageSummarize     = "summarize"
	StageExplore       = "explore"
	StageCheck         = "check"
	// StageBeforeTree is a navigation's: the plugins are asked.
	StageBeforeTree = "session_before_tree"
)

// Event is one notification of a Session.
type Event struct {
	Kind   EventKind
	Time   time.Time
	Reason Reason
	// Aborted: AbortCompaction or the caller's context stopped it.
	Aborted bool
	// Proposed: a compaction_end of a proposal (ProposeCompaction): made,
	// not saved.
	Proposed bool
	// Cancelled: a plugin cancelled it; Plugin names the plugin.
	Cancelled bool
	// WillRetry: the agent should retry the failed turn (overflow).
	WillRetry bool
	// Continue is the prompt to send after a threshold compaction, "" for
	// none.
	Continue string
	// Error is the failure in one line, "" on success.
	Error        string
	Plugin       string
	TokensBefore int
	TokensAfter  int
	// EntryID is the saved compaction entry's id (end events of saved
	// compactions).
	EntryID string
	// Pruned counts the tool outputs an EventPruned replaced.
	Pruned int
	// Progress is the worker's turn of a compaction_progress event.
	Progress *explore.Progress
	// Timeline is the plugin calls of the run a compaction_end ends,
	// saved or not (a plugin's cancel leaves no entry to record it in).
	Timeline []hooks.TimelineStep
}

// subscribers fans events out to callbacks, in subscription order.
type subscribers struct {
	mu   sync.Mutex
	next int
	subs []subscriber
}

type subscriber struct {
	id int
	fn func(Event)
}

func (s *subscribers) add(fn func(Event)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.next
	s.next++
	s.subs = append(s.subs, subscriber{id, fn})
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, sub := range s.subs {
			if sub.id == id {
				s.subs = append(s.subs[:i:i], s.subs[i+1:]...)
				return
			}
		}
	}
}

func (s *subscribers) emit(ev Event) {
	s.mu.Lock()
	subs := s.subs
	s.mu.Unlock()
	for _, sub := range subs {
		sub.fn(ev)
	}
}

type stagesKey struct{}

// WithStages asks the operations run under ctx to call fn at each step
// (the Stage constants) as they reach it: the propose mode shows them to
// pi's user. The steps are not Session events, which every subscriber of a
// daemon's session would get.
func WithStages(ctx context.Context, fn func(stage string)) context.Context {
	return context.WithValue(ctx, stagesKey{}, fn)
}

// stage reports that the operation of ctx reached the step named.
func stage(ctx context.Context, name string) {
	if fn, ok := ctx.Value(stagesKey{}).(func(string)); ok && fn != nil {
		fn(name)
	}
}
