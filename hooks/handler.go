package hooks

import "context"

// BeforeCompactHandler handles session_before_compact.
type BeforeCompactHandler interface {
	BeforeCompact(ctx context.Context, ev *BeforeCompactEvent) (*BeforeCompactResult, error)
}

// CompactingHandler handles session.compacting.
type CompactingHandler interface {
	Compacting(ctx context.Context, ev *CompactingEvent) (*CompactingResult, error)
}

// CompactHandler handles the session_compact notification.
type CompactHandler interface {
	Compact(ctx context.Context, ev *CompactEvent) error
}

// BeforeTreeHandler handles session_before_tree.
type BeforeTreeHandler interface {
	BeforeTree(ctx context.Context, ev *BeforeTreeEvent) (*BeforeTreeResult, error)
}

// TreeHandler handles the session_tree notification.
type TreeHandler interface {
	Tree(ctx context.Context, ev *TreeEvent) error
}

// EventLister may be implemented by a handler value to state exactly which
// events it handles, overriding detection by interface.
type EventLister interface {
	ImplementedEvents() []EventID
}

// BeforeCompactFunc adapts a function to BeforeCompactHandler.
type BeforeCompactFunc func(ctx context.Context, ev *BeforeCompactEvent) (*BeforeCompactResult, error)

// BeforeCompact calls f.
func (f BeforeCompactFunc) BeforeCompact(ctx context.Context, ev *BeforeCompactEvent) (*BeforeCompactResult, error) {
	return f(ctx, ev)
}

// CompactingFunc adapts a function to CompactingHandler.
type CompactingFunc func(ctx context.Context, ev *CompactingEvent) (*CompactingResult, error)

// Compacting calls f.
func (f CompactingFunc) Compacting(ctx context.Context, ev *CompactingEvent) (*CompactingResult, error) {
	return f(ctx, ev)
}

// CompactFunc adapts a function to CompactHandler.
type CompactFunc func(ctx context.Context, ev *CompactEvent) error

// Compact calls f.
func (f CompactFunc) Compact(ctx context.Context, ev *CompactEvent) error { return f(ctx, ev) }

// BeforeTreeFunc adapts a function to BeforeTreeHandler.
type BeforeTreeFunc func(ctx context.Context, ev *BeforeTreeEvent) (*BeforeTreeResult, error)

// BeforeTree calls f.
func (f BeforeTreeFunc) BeforeTree(ctx context.Context, ev *BeforeTreeEvent) (*BeforeTreeResult, error) {
	return f(ctx, ev)
}

// TreeFunc adapts a function to TreeHandler.
type TreeFunc func(ctx context.Context, ev *TreeEvent) error

// Tree calls f.
func (f TreeFunc) Tree(ctx context.Context, ev *TreeEvent) error { return f(ctx, ev) }

// Funcs bundles optional handler functions; the events whose field is set are
// the ones it implements. It is the shortest way to write a small plugin.
type Funcs struct {
	OnBeforeCompact BeforeCompactFunc
	OnCompacting    CompactingFunc
	OnCompact       CompactFunc
	OnBeforeTree    BeforeTreeFunc
	OnTree          TreeFunc
}

// ImplementedEvents lists the events whose function is set.
func (f Funcs) ImplementedEvents() []EventID {
	var ids []EventID
	if f.OnBeforeCompact != nil {
		ids = append(ids, EventBeforeCompact)
	}
	if f.OnCompacting != nil {
		ids = append(ids, EventCompacting)
	}
	if f.OnCompact != nil {
		ids = append(ids, EventCompact)
	}
	if f.OnBeforeTree != nil {
		ids = append(ids, EventBeforeTree)
	}
	if f.OnTree != nil {
		ids = append(ids, EventTree)
	}
	return ids
}

// BeforeCompact calls OnBeforeCompact when set.
func (f Funcs) BeforeCompact(ctx context.Context, ev *BeforeCompactEvent) (*BeforeCompactResult, error) {
	if f.OnBeforeCompact == nil {
		return nil, nil
	}
	return f.OnBeforeCompact(ctx, ev)
}

// Compacting calls OnCompacting when set.
func (f Funcs) Compacting(ctx context.Context, ev *CompactingEvent) (*CompactingResult, error) {
	if f.OnCompacting == nil {
		return nil, nil
	}
	return f.OnCompacting(ctx, ev)
}

// Compact calls OnCompact when set.
func (f Funcs) Compact(ctx context.Context, ev *CompactEvent) error {
	if f.OnCompact == nil {
		return nil
	}
	return f.OnCompact(ctx, ev)
}

// BeforeTree calls OnBeforeTree when set.
func (f Funcs) BeforeTree(ctx context.Context, ev *BeforeTreeEvent) (*BeforeTreeResult, error) {
	if f.OnBeforeTree == nil {
		return nil, nil
	}
	return f.OnBeforeTree(ctx, ev)
}

// Tree calls OnTree when set.
func (f Funcs) Tree(ctx context.Context, ev *TreeEvent) error {
	if f.OnTree == nil {
		return nil
	}
	return f.OnTree(ctx, ev)
}

// DetectEvents reports which events h handles: the list of an EventLister,
// else every handler interface h implements, in AllEvents order.
func DetectEvents(h any) []EventID {
	if l, ok := h.(EventLister); ok {
		var ids []EventID
		seen := map[EventID]bool{}
		for _, id := range l.ImplementedEvents() {
			if id.Valid() && !seen[id] && implementsInterface(h, id) {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		return ids
	}
	var ids []EventID
	for _, id := range AllEvents() {
		if implementsInterface(h, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

func implementsInterface(h any, id EventID) bool {
	var ok bool
	switch id {
	case EventBeforeCompact:
		_, ok = h.(BeforeCompactHandler)
	case EventCompacting:
		_, ok = h.(CompactingHandler)
	case EventCompact:
		_, ok = h.(CompactHandler)
	case EventBeforeTree:
		_, ok = h.(BeforeTreeHandler)
	case EventTree:
		_, ok = h.(TreeHandler)
	}
	return ok
}
