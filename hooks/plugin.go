package hooks

import (
	"context"
	"fmt"
	"time"
)

// Failure is a plugin's failure policy (docs/behaviour.md §13, §14).
type Failure string

const (
	// FailureOpen treats an error, timeout, panic or crash as no result.
	FailureOpen Failure = "open"
	// FailureClosed cancels the operation with an error naming the plugin.
	FailureClosed Failure = "closed"
)

// ParseFailure maps the configuration value to a Failure; "" means open.
func ParseFailure(s string) (Failure, error) {
	switch Failure(s) {
	case "", FailureOpen:
		return FailureOpen, nil
	case FailureClosed:
		return FailureClosed, nil
	}
	return "", fmt.Errorf("failure policy %q: want %q or %q", s, FailureOpen, FailureClosed)
}

// PluginInfo is how the Dispatcher orders and bounds a plugin's calls.
type PluginInfo struct {
	// Name is unique among the configured plugins; it namespaces the
	// plugin's preserveData and appears in logs and errors.
	Name string
	// Priority: lower runs first.
	Priority int
	// Order is the position in the configuration; it breaks priority ties.
	Order int
	// Timeout bounds each call; zero means the Dispatcher's default.
	Timeout time.Duration
	// Failure is the failure policy; "" means open.
	Failure Failure
	// Limits bound the plugin's results and payloads; zero fields mean
	// the defaults.
	Limits Limits
}

// Plugin is what the Dispatcher calls: an in-process handler (NewPlugin) or a
// supervised subprocess (package internal/pluginhost). The Dispatcher calls an
// event method only when Implements reports true for that event, always
// with a deadline, and tolerates panics and errors.
type Plugin interface {
	Info() PluginInfo
	Implements(event EventID) bool
	BeforeCompactHandler
	CompactingHandler
	CompactHandler
	BeforeTreeHandler
	TreeHandler
}

// NewPlugin wraps a handler value (anything implementing one or more of the
// handler interfaces, for example Funcs) as a Plugin.
func NewPlugin(info PluginInfo, handler any) Plugin {
	p := &inProcess{info: info, h: handler}
	for _, id := range DetectEvents(handler) {
		p.events |= 1 << eventBit(id)
	}
	return p
}

type inProcess struct {
	info   PluginInfo
	h      any
	events uint8
}

func eventBit(id EventID) uint {
	for i, e := range AllEvents() {
		if e == id {
			return uint(i)
		}
	}
	return 7
}

func (p *inProcess) Info() PluginInfo { return p.info }

func (p *inProcess) Implements(id EventID) bool {
	return id.Valid() && p.events&(1<<eventBit(id)) != 0
}

func (p *inProcess) BeforeCompact(ctx context.Context, ev *BeforeCompactEvent) (*BeforeCompactResult, error) {
	if h, ok := p.h.(BeforeCompactHandler); ok && p.Implements(EventBeforeCompact) {
		return h.BeforeCompact(ctx, ev)
	}
	return nil, nil
}

func (p *inProcess) Compacting(ctx context.Context, ev *CompactingEvent) (*CompactingResult, error) {
	if h, ok := p.h.(CompactingHandler); ok && p.Implements(EventCompacting) {
		return h.Compacting(ctx, ev)
	}
	return nil, nil
}

func (p *inProcess) Compact(ctx context.Context, ev *CompactEvent) error {
	if h, ok := p.h.(CompactHandler); ok && p.Implements(EventCompact) {
		return h.Compact(ctx, ev)
	}
	return nil
}

func (p *inProcess) BeforeTree(ctx context.Context, ev *BeforeTreeEvent) (*BeforeTreeResult, error) {
	if h, ok := p.h.(BeforeTreeHandler); ok && p.Implements(EventBeforeTree) {
		return h.BeforeTree(ctx, ev)
	}
	return nil, nil
}

func (p *inProcess) Tree(ctx context.Context, ev *TreeEvent) error {
	if h, ok := p.h.(TreeHandler); ok && p.Implements(EventTree) {
		return h.Tree(ctx, ev)
	}
	return nil
}
