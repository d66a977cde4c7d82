package sdk

import (
	"fmt"
	"slices"

	"github.com/pith-dev/pith/hooks"
)

// ServeOpts are a plugin's handlers, one field per event; set those the
// plugin handles and leave the others nil. The fields are the handler
// interfaces, so a handler whose method has the wrong signature does not
// compile (Serve, which takes any value, can only refuse it at start-up).
//
// One value may fill several fields:
//
//	g := guard{}
//	sdk.ServePlugin(sdk.ServeOpts{BeforeCompact: g, Compacting: g})
//
// and a function fills one through its adapter (sdk.CompactFunc, …). A
// Funcs value, or any EventLister, fills only the fields of the events it
// lists: a field set to a Funcs whose function for that event is nil is
// left out, as Serve would leave it out.
type ServeOpts struct {
	BeforeCompact BeforeCompactHandler
	Compacting    CompactingHandler
	Compact       CompactHandler
	BeforeTree    BeforeTreeHandler
	Tree          TreeHandler
	// Close, when set, is called when the host stops the plugin, to
	// release its resources. It is not inferred from the handlers: a
	// handler's own Close method runs only when it is set here too.
	Close Closer
}

// ServePlugin runs the handlers of o as a plugin until the host stops it
// or dies, then returns nil. Only the events whose field is set are
// reported to the host and sent by it. It is Serve with the handlers
// checked by the compiler: the same handshake, TLS, logging, panic guard
// and errors (ErrNoEvents when no field is set; run outside Pith it says
// ErrNotLaunchedByHost and exits with status 1). Call it from main:
//
//	if err := sdk.ServePlugin(sdk.ServeOpts{BeforeCompact: guard{}}, sdk.WithName("guard")); err != nil {
//		os.Exit(1) // ServePlugin has logged why
//	}
//
// sdk.StartInProcess and sdktest.InProcess take a ServeOpts as well as a
// handler value, so a plugin's tests can serve exactly what its main does.
func ServePlugin(o ServeOpts, opts ...Option) error {
	return serve(o, opts)
}

// handlerOf is the value the server serves for h: a ServeOpts's set
// handlers, else h itself.
func handlerOf(h Handler) Handler {
	if o, ok := h.(ServeOpts); ok {
		return o.handler()
	}
	return h
}

// closingFuncs is a ServeOpts's handlers with its Close.
type closingFuncs struct {
	hooks.Funcs
	Closer
}

// handler is o as the handler value the server serves: a Funcs holding
// the set fields' methods, so that Describe lists exactly those events,
// and the Close when one is set.
func (o ServeOpts) handler() Handler {
	if o.Close != nil {
		return closingFuncs{o.funcs(), o.Close}
	}
	return o.funcs()
}

func (o ServeOpts) funcs() hooks.Funcs {
	var f hooks.Funcs
	if handles(o.BeforeCompact, hooks.EventBeforeCompact) {
		f.OnBeforeCompact = o.BeforeCompact.BeforeCompact
	}
	if handles(o.Compacting, hooks.EventCompacting) {
		f.OnCompacting = o.Compacting.Compacting
	}
	if handles(o.Compact, hooks.EventCompact) {
		f.OnCompact = o.Compact.Compact
	}
	if handles(o.BeforeTree, hooks.EventBeforeTree) {
		f.OnBeforeTree = o.BeforeTree.BeforeTree
	}
	if handles(o.Tree, hooks.EventTree) {
		f.OnTree = o.Tree.Tree
	}
	return f
}

// handles reports whether the value of a ServeOpts field handles event:
// it is set and, when it lists its events, lists this one.
func handles(h any, event hooks.EventID) bool {
	return h != nil && slices.Contains(hooks.DetectEvents(h), event)
}

// checkServeOpts refuses a ServeOpts that sets no handler, saying so
// rather than describe a Funcs's method set.
func checkServeOpts(o ServeOpts) error {
	if len(o.funcs().ImplementedEvents()) > 0 {
		return nil
	}
	return fmt.Errorf("%w: ServeOpts sets none of BeforeCompact, Compacting, Compact, BeforeTree, Tree (or only Funcs without the function for its field)", ErrNoEvents)
}
