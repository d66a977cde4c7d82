package wiring

import (
	"context"
	"slices"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// sequencedHooks is the engine's hook dispatcher for one command: each
// event first waits for its plugins (schedule.reach) and, once
// dispatched, lets the plugins that have nothing more to do stop while the
// command goes on (schedule.passed).
type sequencedHooks struct {
	d *dispatch.Dispatcher
	q *schedule
}

var (
	_ engine.Hooks     = sequencedHooks{}
	_ engine.TreeHooks = sequencedHooks{}
)

// Has tells the engine whether to build an event's payload: true also for
// a plugin still starting whose configuration lists the event.
func (h sequencedHooks) Has(event hooks.EventID) bool { return h.q.handles(event) }

// passed records the dispatch of event; an error or a cancel ends the
// operation, so no later event fires.
func (h sequencedHooks) passed(event hooks.EventID, cancelled bool, err error) {
	if cancelled || err != nil {
		h.q.passedAll()
		return
	}
	h.q.passed(event)
}

func (h sequencedHooks) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent, lim hooks.CompactionLimits) (hooks.BeforeCompactOutcome, error) {
	h.q.reach(ctx, hooks.EventBeforeCompact)
	out, err := h.d.BeforeCompact(ctx, ev, lim)
	h.passed(hooks.EventBeforeCompact, out.Cancelled, err)
	if out.Compaction != nil {
		// A plugin supplied the compaction: the engine does not ask for
		// session.compacting, so its plugins can stop now.
		h.q.passed(hooks.EventCompacting)
	}
	return out, err
}

func (h sequencedHooks) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (hooks.CompactingOutcome, error) {
	h.q.reach(ctx, hooks.EventCompacting)
	out, err := h.d.Compacting(ctx, ev)
	h.passed(hooks.EventCompacting, false, err)
	return out, err
}

func (h sequencedHooks) Compact(ctx context.Context, ev *hooks.CompactEvent) error {
	h.q.reach(ctx, hooks.EventCompact)
	err := h.d.Compact(ctx, ev)
	h.q.passed(hooks.EventCompact) // the compaction is saved whatever the plugins said
	return err
}

func (h sequencedHooks) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent, lim hooks.SummaryLimits) (hooks.BeforeTreeOutcome, error) {
	h.q.reach(ctx, hooks.EventBeforeTree)
	out, err := h.d.BeforeTree(ctx, ev, lim)
	h.passed(hooks.EventBeforeTree, out.Cancelled, err)
	return out, err
}

func (h sequencedHooks) Tree(ctx context.Context, ev *hooks.TreeEvent) error {
	h.q.reach(ctx, hooks.EventTree)
	err := h.d.Tree(ctx, ev)
	h.q.passed(hooks.EventTree)
	return err
}

// skippable lists the events an earlier event's outcome may skip, whose
// plugins the schedule starts only once the command reaches them.
// session.compacting does not fire when a session_before_compact plugin
// supplies the compaction, so it is skippable when some plugin may handle
// session_before_compact (one that lists it, or one that lists no events);
// with none, it always fires and its plugins start in the background.
func skippable(specs []pluginhost.Spec) []hooks.EventID {
	for _, sp := range specs {
		if len(sp.Events) == 0 || slices.Contains(sp.Events, hooks.EventBeforeCompact) {
			return []hooks.EventID{hooks.EventCompacting}
		}
	}
	return nil
}
