package sdktest

import (
	"context"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// Dispatcher is the host's own dispatcher holding just the plugin under
// test: its answers are what the engine would receive after the host's
// deadlines, failure policy, limits and validation. It is a wrapper so
// that the host's dispatcher type stays the host's.
type Dispatcher struct {
	d *dispatch.Dispatcher
}

// Has reports whether the plugin handles event.
func (d *Dispatcher) Has(event hooks.EventID) bool { return d.d.Has(event) }

// BeforeCompact dispatches session_before_compact; a supplied compaction
// is validated against lim.
func (d *Dispatcher) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent, lim hooks.CompactionLimits) (hooks.BeforeCompactOutcome, error) {
	return d.d.BeforeCompact(ctx, ev, lim)
}

// Compacting dispatches session.compacting.
func (d *Dispatcher) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (hooks.CompactingOutcome, error) {
	return d.d.Compacting(ctx, ev)
}

// Compact dispatches the session_compact notification.
func (d *Dispatcher) Compact(ctx context.Context, ev *hooks.CompactEvent) error {
	return d.d.Compact(ctx, ev)
}

// BeforeTree dispatches session_before_tree; a supplied summary is
// validated against lim.
func (d *Dispatcher) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent, lim hooks.SummaryLimits) (hooks.BeforeTreeOutcome, error) {
	return d.d.BeforeTree(ctx, ev, lim)
}

// Tree dispatches the session_tree notification.
func (d *Dispatcher) Tree(ctx context.Context, ev *hooks.TreeEvent) error {
	return d.d.Tree(ctx, ev)
}
