package dispatch

import (
	"context"
	"math"
	"sync"

	"github.com/pith-dev/pith/hooks"
)

// maxReasonBytes bounds the reason a timeline step keeps: it is written
// into the session file, and a plugin's error text is not ours to size.
const maxReasonBytes = 512

// Timeline records the plugin calls of one operation. Put its Observe in
// the operation's context with WithObserver; it is safe for the concurrent
// calls of a fanned-out event.
type Timeline struct {
	mu    sync.Mutex
	steps []hooks.TimelineStep
}

// Observe records o as a step.
func (t *Timeline) Observe(o hooks.Observation) {
	reason := o.Reason
	if len(reason) > maxReasonBytes {
		reason = clipUTF8(reason, maxReasonBytes) + "…"
	}
	step := hooks.TimelineStep{
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
func (t *Timeline) Steps() []hooks.TimelineStep {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]hooks.TimelineStep(nil), t.steps...)
}

type observerKey struct{}

// WithObserver returns ctx carrying fn: every plugin call a Dispatcher
// makes under it is reported to fn as well as to Options.Observe, so one
// operation can record its own calls (its hook timeline) on a Dispatcher
// shared by many. Observers nest: an outer one still sees the calls.
func WithObserver(ctx context.Context, fn func(hooks.Observation)) context.Context {
	if outer, ok := ctx.Value(observerKey{}).(func(hooks.Observation)); ok {
		inner := fn
		fn = func(o hooks.Observation) { inner(o); outer(o) }
	}
	return context.WithValue(ctx, observerKey{}, fn)
}

func observerFrom(ctx context.Context) func(hooks.Observation) {
	fn, _ := ctx.Value(observerKey{}).(func(hooks.Observation))
	return fn
}

// clipUTF8 cuts s to at most n bytes without splitting a rune.
func clipUTF8(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
