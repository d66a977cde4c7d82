package hooks

import (
	"context"
	"math"
	"sync"
)

// Results of a plugin call, as a hook timeline shows them: what the call
// came to for the operation, not only whether it returned.
const (
	ResultNoOpinion  = "no opinion"          // returned nothing the operation used
	ResultCancel     = "cancel"              // cancelled the operation; Reason says why
	ResultCompaction = "compaction supplied" // session_before_compact supplied the compaction
	ResultSummary    = "summary supplied"    // session_before_tree supplied the summary
	ResultNotified   = "notified"            // a notification (session_compact, session_tree) was delivered
	ResultRejected   = "rejected"            // the result failed validation and was skipped
	ResultFailure    = "failure"             // failed; Reason says how and which policy applied
	ResultAborted    = "aborted"             // the operation was cancelled meanwhile
)

// maxReasonBytes bounds the reason a timeline step keeps: it is written
// into the session file, and a plugin's error text is not ours to size.
const maxReasonBytes = 512

// TimelineStep is one plugin call of an operation's hook timeline, in the
// form a compaction or branch summary entry stores it as
// details.hookTimeline.
type TimelineStep struct {
	Plugin     string  `json:"plugin"`
	Event      EventID `json:"event"`
	DurationMs float64 `json:"durationMs"`
	Result     string  `json:"result"`
	Reason     string  `json:"reason,omitempty"`
}

// Timeline records the plugin calls of one operation. Put its Observe in
// the operation's context with WithObserver; it is safe for the concurrent
// calls of a fanned-out event.
type Timeline struct {
	mu    sync.Mutex
	steps []TimelineStep
}

// Observe records o as a step.
func (t *Timeline) Observe(o Observation) {
	reason := o.Reason
	if len(reason) > maxReasonBytes {
		reason = clipUTF8(reason, maxReasonBytes) + "…"
	}
	step := TimelineStep{
		Plugin:     o.Plugin,
		Event:      o.Event,
		DurationMs: math.Round(float64(o.Duration.Microseconds())/100) / 10,
		Result:     o.Result,
		Reason:     reason,
	}
	t.mu.Lock()
	t.steps = append(t.steps, step)
	t.mu.Unlock()
}

// Steps returns the steps recorded so far, in the order the calls ended.
func (t *Timeline) Steps() []TimelineStep {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TimelineStep(nil), t.steps...)
}

type observerKey struct{}

// WithObserver returns ctx carrying fn: every plugin call a Dispatcher
// makes under it is reported to fn as well as to Options.Observe, so one
// operation can record its own calls (its hook timeline) on a Dispatcher
// shared by many. Observers nest: an outer one still sees the calls.
func WithObserver(ctx context.Context, fn func(Observation)) context.Context {
	if outer, ok := ctx.Value(observerKey{}).(func(Observation)); ok {
		inner := fn
		fn = func(o Observation) { inner(o); outer(o) }
	}
	return context.WithValue(ctx, observerKey{}, fn)
}

func observerFrom(ctx context.Context) func(Observation) {
	fn, _ := ctx.Value(observerKey{}).(func(Observation))
	return fn
}

// clipUTF8 cuts s to at most n bytes without splitting a rune.
func clipUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
