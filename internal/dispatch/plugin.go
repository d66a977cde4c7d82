package dispatch

import (
	"context"
	"fmt"

	"github.com/pith-dev/pith/hooks"
)

// ParseFailure maps the configuration value to a Failure; "" means open.
func ParseFailure(s string) (hooks.Failure, error) {
	switch hooks.Failure(s) {
	case "", hooks.FailureOpen:
		return hooks.FailureOpen, nil
	case hooks.FailureClosed:
		return hooks.FailureClosed, nil
	}
	return "", fmt.Errorf("failure policy %q: want %q or %q", s, hooks.FailureOpen, hooks.FailureClosed)
}

// NewPlugin wraps a handler value (anything implementing one or more of the
// handler interfaces, for example Funcs) as a Plugin.
func NewPlugin(info hooks.PluginInfo, handler any) hooks.Plugin {
	p := &inProcess{info: info, h: handler}
	for _, id := range hooks.DetectEvents(handler) {
		p.events |= 1 << eventBit(id)
	}
	return p
}

type inProcess struct {
	info   hooks.PluginInfo
	h      any
	events uint8
}

func eventBit(id hooks.EventID) uint {
	for i, e := range hooks.AllEvents() {
		if e == id {
			return uint(i)
		}
	}
	return 7
}

func (p *inProcess) Info() hooks.PluginInfo { return p.info }

func (p *inProcess) Implements(id hooks.EventID) bool {
	return id.Valid() && p.events&(1<<eventBit(id)) != 0
}

func (p *inProcess) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
	if h, ok := p.h.(hooks.BeforeCompactHandler); ok && p.Implements(hooks.EventBeforeCompact) {
		return h.BeforeCompact(ctx, ev)
	}
	return nil, nil
}

func (p *inProcess) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
	if h, ok := p.h.(hooks.CompactingHandler); ok && p.Implements(hooks.EventCompacting) {
		return h.Compacting(ctx, ev)
	}
	return nil, nil
}

func (p *inProcess) Compact(ctx context.Context, ev *hooks.CompactEvent) error {
	if h, ok := p.h.(hooks.CompactHandler); ok && p.Implements(hooks.EventCompact) {
		return h.Compact(ctx, ev)
	}
	return nil
}

func (p *inProcess) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent) (*hooks.BeforeTreeResult, error) {
	if h, ok := p.h.(hooks.BeforeTreeHandler); ok && p.Implements(hooks.EventBeforeTree) {
		return h.BeforeTree(ctx, ev)
	}
	return nil, nil
}

func (p *inProcess) Tree(ctx context.Context, ev *hooks.TreeEvent) error {
	if h, ok := p.h.(hooks.TreeHandler); ok && p.Implements(hooks.EventTree) {
		return h.Tree(ctx, ev)
	}
	return nil
}
