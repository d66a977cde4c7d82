package wiring

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// schedule runs the plugins of one operation whose hook events come in a
// known order, such as a CLI compaction (session_before_compact, then
// session.compacting, then session_compact). Each plugin runs only for the
// stretch of the operation where it can be called:
//
//   - launch starts, all at once and in the background, the plugins the
//     operation meets first — those of the first event, those that fail
//     closed and those whose configuration lists no events — and, once
//     those have started, the others, so that they start while the
//     operation runs instead of competing for the CPU with the first ones;
//     it returns at once, so that the caller can open the session while
//     the plugins start;
//   - ready waits for the plugins the operation must know about before it
//     does anything: those that fail closed (a veto must not be skipped
//     because its plugin could not start, and the operation must not
//     half-happen before that is known) and those whose configuration
//     lists no events (only Describe says what they handle); the first
//     event's plugins are waited for when it is reached, so that the work
//     before it overlaps their start;
//   - a plugin all of whose events may be skipped by an earlier event's
//     outcome (onReach) is started only when the operation reaches one of
//     them, so that an operation that skips them does not pay for it;
//   - reach, called before an event is dispatched, waits until that
//     event's plugins have started (or failed to);
//   - passed, called once an event has been dispatched or is known not to
//     fire, stops in the background every plugin whose events have all
//     passed, so that its shutdown overlaps the rest of the operation;
//   - stop stops what is left and waits for every plugin, including those
//     stopped in the background, so that none outlives the operation.
//
// Each plugin's own start and stop are its Supervisor's
// (StartInBackground, StopInBackground); the schedule only says when. It
// is for one pass through its events; the daemon, whose plugins serve
// many operations, uses a pluginhost.Host.
type schedule struct {
	opts  pluginhost.Options
	order []hooks.EventID
	// onReach are the events an earlier event's outcome may skip.
	onReach []hooks.EventID

	mu      sync.Mutex
	passedE map[hooks.EventID]bool
	members []scheduled
}

// scheduled is one plugin of a schedule.
type scheduled struct {
	sup *pluginhost.Supervisor
	// configured are the events the configuration lists (nil: unknown
	// until Describe).
	configured []hooks.EventID
	// first: started at launch, before the others.
	first bool
	// required: waited for by ready, before the operation.
	required bool
}

// newSchedule returns a schedule for an operation that fires order's
// events in that order (each at most once, some maybe not at all), whose
// plugins all of whose events are among onReach start only when the
// operation reaches one of them: starting a plugin costs more CPU than
// most operations, and on a busy machine that CPU is taken from the
// operation itself. The price, when the event does fire, is that its
// first dispatch waits for the start. A plugin that fails closed is still
// started first.
func newSchedule(opts pluginhost.Options, order []hooks.EventID, onReach ...hooks.EventID) *schedule {
	return &schedule{opts: opts, order: order, onReach: onReach, passedE: map[hooks.EventID]bool{}}
}

// onReachOnly reports whether every configured event of m may be skipped.
func (q *schedule) onReachOnly(m scheduled) bool {
	if len(m.configured) == 0 {
		return false
	}
	for _, e := range m.configured {
		if !slices.Contains(q.onReach, e) {
			return false
		}
	}
	return true
}

// launch makes a plugin for every spec, checks every binary and starts
// the plugins in the background: the ones the operation meets first at
// once, then the others once those have started (or failed to), except
// the ones onReach defers. It returns without waiting; ctx bounds every
// start.
func (q *schedule) launch(ctx context.Context, specs []pluginhost.Spec) error {
	if err := pluginhost.ValidateSpecs(specs); err != nil {
		return err
	}
	first := hooks.EventID("")
	if len(q.order) > 0 {
		first = q.order[0]
	}
	q.mu.Lock()
	for _, sp := range specs {
		required := len(sp.Events) == 0 || sp.Failure == hooks.FailureClosed
		q.members = append(q.members, scheduled{
			sup:        pluginhost.NewSupervisor(sp, q.opts),
			configured: sp.Events,
			first:      required || slices.Contains(sp.Events, first),
			required:   required,
		})
	}
	members := slices.Clone(q.members)
	q.mu.Unlock()
	for _, m := range members {
		m.sup.CheckInBackground()
	}
	var firsts []scheduled
	for _, m := range members {
		if m.first {
			m.sup.StartInBackground(ctx)
			firsts = append(firsts, m)
		}
	}
	go func() {
		for _, m := range firsts {
			<-m.sup.Started()
		}
		for _, m := range members {
			if !q.onReachOnly(m) {
				m.sup.StartInBackground(ctx)
			}
		}
	}()
	return nil
}

// ready waits for every plugin's checksum check and for the plugins that
// fail closed or list no events, and returns the plugins to give the
// Dispatcher — every plugin except those whose binary failed its check
// and those that were waited for and failed to start — and the joined
// errors of those failures (each also logged). An error that wraps
// pluginhost.ErrChecksumMismatch must stop the operation, whatever the
// plugin's failure policy: the binary is not the one the configuration
// trusts, and skipping it would drop its veto unseen.
func (q *schedule) ready() ([]hooks.Plugin, error) {
	var errs []error
	var plugins []hooks.Plugin
	for _, m := range q.snapshot() {
		if err := m.sup.Checked(); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.required {
			<-m.sup.Started()
			if err := m.sup.StartErr(); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		plugins = append(plugins, m.sup)
	}
	return plugins, errors.Join(errs...)
}

// start is launch, then ready.
func (q *schedule) start(ctx context.Context, specs []pluginhost.Spec) ([]hooks.Plugin, error) {
	if err := q.launch(ctx, specs); err != nil {
		return nil, err
	}
	return q.ready()
}

func (q *schedule) snapshot() []scheduled {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.members)
}

// handles reports whether m's plugin is or may be called for event: what
// Describe said once it has started, what the configuration lists before.
func (m scheduled) handles(event hooks.EventID) bool {
	select {
	case <-m.sup.Started():
		return m.sup.StartErr() == nil && m.sup.Implements(event)
	default:
		return m.configured == nil || slices.Contains(m.configured, event)
	}
}

// handles reports whether any plugin of the schedule handles, or may
// handle once started, event.
func (q *schedule) handles(event hooks.EventID) bool {
	for _, m := range q.snapshot() {
		if m.handles(event) {
			return true
		}
	}
	return false
}

// reach is called before event is dispatched: every earlier event of the
// order has passed, fired or not, and the plugins that may handle event
// are waited for (or ctx ends).
func (q *schedule) reach(ctx context.Context, event hooks.EventID) {
	if i := slices.Index(q.order, event); i > 0 {
		q.passed(q.order[:i]...)
	}
	for _, m := range q.snapshot() {
		if !m.handles(event) {
			continue
		}
		m.sup.StartInBackground(ctx)
		select {
		case <-m.sup.Started():
		case <-ctx.Done():
			return
		}
	}
}

// passed records that events have been dispatched or will not fire, and
// stops in the background every plugin none of whose events is still to
// come.
func (q *schedule) passed(events ...hooks.EventID) {
	q.mu.Lock()
	for _, e := range events {
		q.passedE[e] = true
	}
	var done []scheduled
	for _, m := range q.members {
		if q.allPassedLocked(m) {
			done = append(done, m)
		}
	}
	q.mu.Unlock()
	for _, m := range done {
		m.sup.StopInBackground()
	}
}

// passedAll records that the operation fires no more events (it ended
// early: cancelled by a plugin, or failed).
func (q *schedule) passedAll() { q.passed(q.order...) }

// allPassedLocked reports whether every event m's plugin may handle has
// passed: the configured ones, and once it has started those it said it
// handles. A plugin whose events are unknown and that has not started
// waits for the end.
func (q *schedule) allPassedLocked(m scheduled) bool {
	events := m.configured
	select {
	case <-m.sup.Started():
		if m.sup.StartErr() == nil {
			events = append(slices.Clone(events), m.sup.Description().Events...)
		}
	default:
		if events == nil {
			return false
		}
	}
	for _, e := range events {
		if !q.passedE[e] && slices.Contains(q.order, e) {
			return false
		}
	}
	return true
}

// stop stops every plugin still running and waits until all of the
// schedule's plugins have stopped, those stopped in the background too.
// Each plugin gets at most 2 s to answer Shutdown before it is killed.
func (q *schedule) stop() {
	members := q.snapshot()
	for _, m := range members {
		m.sup.StopInBackground()
	}
	for _, m := range members {
		<-m.sup.Stopped()
	}
}
