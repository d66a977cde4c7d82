package server

import (
	"errors"
	"fmt"
	"sync"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/admission"
	sessionv1 "github.com/pith-dev/pith/internal/gen/pith/session/v1"
)

// callerSlots is the one place what one caller may hold at once is
// bounded, per kind of hold (slotKind): the long-lived streams it holds
// open (server.maxStreams: every WatchEvents call and every live update
// stream of the viewer, for its whole life), the calls it has in flight
// (server.maxCallsInFlight: every other call, from the moment its
// credentials are checked until its answer has left the daemon — gRPC
// keeps an answer until the client has read it, answer_hold.go), and the
// sessions it opened (server.maxOpenSessionsPerCaller: from the open
// that loads one to its close; each holds its entries in memory, and a
// caller filling server.maxOpenSessions with sessions in use locked
// every other tenant out). Without them any caller — one token scoped to
// a single directory included — could open streams until the daemon ran
// out of memory (each holds a goroutine, gRPC's or HTTP's stream state
// and an event buffer), or run any number of calls at once and starve
// every other tenant (six concurrent GetContext of a 30 MB session took
// 432 MB). Callers are counted by name (a token's, a client
// certificate's subject); anonymous callers share the one name "". A
// refusal is the caller's own limit (admission.ErrCallerLimit).
type callerSlots = admission.Counter[slotKey]

type slotKey struct {
	name string
	kind slotKind
}

// slotKind is what a slot holds.
type slotKind int

const (
	// slotStream: an event stream (WatchEvents, the viewer's live page).
	slotStream slotKind = iota
	// slotCall: any other call, until its answer has left.
	slotCall
	// slotSession: an open session, from the open that loaded it to its
	// close (for idleness, the bounds, or by its client); it counts for
	// the caller that opened it, whoever uses it later.
	slotSession
)

// ErrBusy marks a call refused because its caller has
// server.maxCallsInFlight calls running: nothing ran, and the same call
// succeeds once one of them answered. It is an ErrLimit too, but a
// passing one: it leaves the daemon as Unavailable with a RetryInfo
// detail (toStatus), which clients retry after a back-off, where a size
// or count limit's ResourceExhausted is final.
var ErrBusy = fmt.Errorf("%w: busy", ErrLimit)

// limit is the bound of kind in cfg, and the refusal past it.
func (k slotKind) limit(cfg config.Server) (int, string) {
	switch k {
	case slotCall:
		return cfg.MaxCallsInFlight, "calls in flight (server.maxCallsInFlight); retry when one has answered"
	case slotSession:
		if len(cfg.Tokens) == 0 && cfg.TLS.ClientCAFile == "" {
			// No way to tell callers apart: every call is the one
			// anonymous caller, whose share would only shrink the
			// daemon's own bound (server.maxOpenSessions).
			return max(cfg.MaxOpenSessions, cfg.MaxOpenSessionsPerCaller), "sessions open, every one in use (server.maxOpenSessions); close one or try again"
		}
		return cfg.MaxOpenSessionsPerCaller, "sessions open, every one in use (server.maxOpenSessionsPerCaller); close one or try again"
	}
	return cfg.MaxStreams, "event streams open (server.maxStreams); close one first"
}

// take takes a slot of kind for c, or refuses with ErrLimit when c holds
// its bound already (the configuration in force: a reload lowering it
// refuses new holds at once and ends none). A refusal is immediate, never
// a wait: a client seeing RESOURCE_EXHAUSTED backs off and retries, as
// gRPC clients do, while a queue in the daemon would hold the very memory
// the bound is there to cap. release gives the slot back; call it once.
func (s *Server) take(c caller, kind slotKind) (release func(), err error) {
	key := slotKey{c.name, kind}
	if err := s.takeSlot(key); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { s.giveSlot(key) }) }, nil
}

// takeSlot is take without the release function (two allocations less
// on every call): the interceptors give the slot back with giveSlot.
// The refusal reads as ErrLimit's (ErrBusy's for calls in flight) and
// is admission's caller limit too.
func (s *Server) takeSlot(key slotKey) error {
	limit, what := key.kind.limit(s.cfg.Load().Server)
	var r *admission.Refusal
	if limit <= 0 {
		// Admission's 0 bounds nothing; a bound of 0 here (never
		// configured: it must be positive) still refuses every hold.
		_, n := s.slots.Held(key)
		r = &admission.Refusal{Bound: admission.ErrCallerLimit, Held: n}
	} else if err := s.slots.Acquire(key, admission.Caps{PerKey: limit}); !errors.As(err, &r) {
		return err
	}
	if key.kind == slotCall {
		return r.Explained(fmt.Errorf("%w: this caller has %d %s", ErrBusy, r.Held, what))
	}
	return r.Explained(fmt.Errorf("%w: this caller has %d %s", ErrLimit, r.Held, what))
}

// giveSlot gives back a slot takeSlot took; call it once.
func (s *Server) giveSlot(key slotKey) { s.slots.Release(key) }

// slotFor is the kind of slot a gRPC method takes: WatchEvents holds a
// stream, every other method (Compact's progress stream included: it
// answers once its compaction ends) is a call.
func slotFor(method string) slotKind {
	if method == sessionv1.SessionService_WatchEvents_FullMethodName {
		return slotStream
	}
	return slotCall
}
