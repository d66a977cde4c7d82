package pluginhost

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
)

// Sequence runs the plugins of one operation whose hook events come in a
// known order, such as a CLI compaction (session_before_compact, then
// session.compacting, then session_compact). Each plugin runs only for the
// stretch of the operation where it can be called:
//
//   - Launch starts, all at once and in the background, the plugins the
//     operation meets first — those of the first event, those that fail
//     closed and those whose configuration lists no events — and, once
//     those have started, the others, so that they start while the
//     operation runs instead of competing for the CPU with the first ones;
//     it returns at once, so that the caller can open the session while
//     the plugins start;
//   - Ready waits for the plugins the operation must know about before it
//     does anything: those that fail closed (a veto must not be skipped
//     because its plugin could not start, and the operation must not
//     half-happen before that is known) and those whose configuration
//     lists no events (only Describe says what they handle); the first
//     event's plugins are waited for when it is reached, so that the work
//     before it overlaps their start;
//   - a plugin all of whose events may be skipped by an earlier event's
//     outcome (OnReach) is started only when the operation reaches one of
//     them, so that an operation that skips them does not pay for it;
//   - Reach, called before an event is dispatched, waits until that
//     event's plugins have started (or failed to);
//   - Passed, called once an event has been dispatched or is known not to
//     fire, stops in the background every plugin whose events have all
//     passed, so that its shutdown overlaps the rest of the operation;
//   - Stop stops what is left and waits for every plugin, including those
//     stopped in the background, so that none outlives the operation.
//
// A Sequence is for one pass through its events; a daemon, whose plugins
// serve many operations, uses a Host.
type Sequence struct {
	opts  Options
	log   hclog.Logger
	order []hooks.EventID

	mu      sync.Mutex
	passed  map[hooks.EventID]bool
	onReach []hooks.EventID
	members []*member
}

// member is one plugin of a Sequence and the state of its start and stop.
type member struct {
	sup *Supervisor
	// configured are the events the configuration lists (nil: unknown
	// until Describe).
	configured []hooks.EventID
	// first: started at Launch, before the others.
	first bool
	// required: waited for by Ready, before the operation.
	required bool

	// checked is closed once the binary's sha256 has been checked
	// (Supervisor.Prepare), at Launch, whenever the plugin will start:
	// a mismatch stops the operation whatever the failure policy
	// (Ready), so it must be known before the operation, not when the
	// plugin is first needed. checkErr is the check's error.
	checked  chan struct{}
	checkErr error

	ctx       context.Context // cancelled by stop: ends a start still under way
	cancel    context.CancelFunc
	startOnce sync.Once
	started   chan struct{} // closed once Start has returned (or never will run)
	startErr  error

	stopOnce sync.Once
	stopped  chan struct{}
}

// NewSequence returns a Sequence for an operation that fires order's
// events in that order (each at most once, some maybe not at all).
func NewSequence(opts Options, order []hooks.EventID) *Sequence {
	opts = opts.withDefaults()
	return &Sequence{opts: opts, log: opts.Logger, order: order, passed: map[hooks.EventID]bool{}}
}

// OnReach names events that an earlier event's outcome may skip; call it
// before Start. A plugin whose events are all among them is not started in
// the background but when the operation reaches one of them: starting a
// plugin costs more CPU than most operations, and on a busy machine that
// CPU is taken from the operation itself. The price, when the event does
// fire, is that its first dispatch waits for the start. A plugin that
// fails closed is still started first.
func (q *Sequence) OnReach(events ...hooks.EventID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.onReach = append(q.onReach, events...)
}

// onReachOnly reports whether every configured event of m may be skipped.
func (q *Sequence) onReachOnly(m *member) bool {
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

// Launch makes a plugin for every spec and starts them in the background:
// the ones the operation meets first at once, then the others once those
// have started (or failed to), except the ones OnReach defers. It returns
// without waiting; ctx bounds every start.
func (q *Sequence) Launch(ctx context.Context, specs []Spec) error {
	if err := validateSpecs(specs); err != nil {
		return err
	}
	first := hooks.EventID("")
	if len(q.order) > 0 {
		first = q.order[0]
	}
	q.mu.Lock()
	for _, sp := range specs {
		mctx, cancel := context.WithCancel(ctx)
		required := len(sp.Events) == 0 || sp.Failure == hooks.FailureClosed
		q.members = append(q.members, &member{
			sup:        NewSupervisor(sp, q.opts),
			configured: sp.Events,
			first:      required || slices.Contains(sp.Events, first),
			required:   required,
			ctx:        mctx,
			cancel:     cancel,
			started:    make(chan struct{}),
			stopped:    make(chan struct{}),
			checked:    make(chan struct{}),
		})
	}
	members := slices.Clone(q.members)
	q.mu.Unlock()
	for _, m := range members {
		go func() {
			defer close(m.checked)
			m.checkErr = m.sup.Prepare()
		}()
	}

	var firsts []*member
	for _, m := range members {
		if m.first {
			q.start(m)
			firsts = append(firsts, m)
		}
	}
	go func() {
		for _, m := range firsts {
			<-m.started
		}
		for _, m := range members {
			if !q.onReachOnly(m) {
				q.start(m)
			}
		}
	}()
	return nil
}

// Ready waits for every plugin's checksum check and for the plugins that
// fail closed or list no events, and returns the plugins to give the
// Dispatcher — every plugin except those whose binary failed its check
// and those that were waited for and failed to start — and the joined
// errors of those failures (each also logged). An error that wraps
// ErrChecksumMismatch must stop the operation, whatever the plugin's
// failure policy: the binary is not the one the configuration trusts,
// and skipping it would drop its veto unseen.
func (q *Sequence) Ready() ([]hooks.Plugin, error) {
	q.mu.Lock()
	members := slices.Clone(q.members)
	q.mu.Unlock()
	var errs []error
	var plugins []hooks.Plugin
	for _, m := range members {
		<-m.checked
		if m.checkErr != nil {
			errs = append(errs, m.checkErr)
			continue
		}
		if m.required {
			<-m.started
			if m.startErr != nil {
				errs = append(errs, m.startErr)
				continue
			}
		}
		plugins = append(plugins, m.sup)
	}
	return plugins, errors.Join(errs...)
}

// Start is Launch, then Ready.
func (q *Sequence) Start(ctx context.Context, specs []Spec) ([]hooks.Plugin, error) {
	if err := q.Launch(ctx, specs); err != nil {
		return nil, err
	}
	return q.Ready()
}

// start launches m's plugin once, in the background.
func (q *Sequence) start(m *member) {
	m.startOnce.Do(func() {
		go func() {
			defer close(m.started)
			<-m.checked
			if m.checkErr != nil {
				m.startErr = m.checkErr // Ready reports it
				return
			}
			if err := m.sup.Start(m.ctx); err != nil {
				m.startErr = err
				if m.ctx.Err() == nil {
					q.log.Error("plugin not started", "plugin", m.sup.Spec().Name, "error", err)
				}
			}
		}()
	})
}

// handles reports whether m's plugin is or may be called for event: what
// Describe said once it has started, what the configuration lists before.
func (m *member) handles(event hooks.EventID) bool {
	select {
	case <-m.started:
		return m.startErr == nil && m.sup.Implements(event)
	default:
		return m.configured == nil || slices.Contains(m.configured, event)
	}
}

// Handles reports whether any plugin of the sequence handles, or may
// handle once started, event.
func (q *Sequence) Handles(event hooks.EventID) bool {
	q.mu.Lock()
	members := slices.Clone(q.members)
	q.mu.Unlock()
	for _, m := range members {
		if m.handles(event) {
			return true
		}
	}
	return false
}

// Reach is called before event is dispatched: every earlier event of the
// order has passed, fired or not, and the plugins that may handle event
// are waited for (or ctx ends).
func (q *Sequence) Reach(ctx context.Context, event hooks.EventID) {
	if i := slices.Index(q.order, event); i > 0 {
		q.Passed(q.order[:i]...)
	}
	q.mu.Lock()
	members := slices.Clone(q.members)
	q.mu.Unlock()
	for _, m := range members {
		if !m.handles(event) {
			continue
		}
		q.start(m)
		select {
		case <-m.started:
		case <-ctx.Done():
			return
		}
	}
}

// Passed records that events have been dispatched or will not fire, and
// stops in the background every plugin none of whose events is still to
// come.
func (q *Sequence) Passed(events ...hooks.EventID) {
	q.mu.Lock()
	for _, e := range events {
		q.passed[e] = true
	}
	var done []*member
	for _, m := range q.members {
		if q.allPassedLocked(m) {
			done = append(done, m)
		}
	}
	q.mu.Unlock()
	for _, m := range done {
		q.stop(m)
	}
}

// PassedAll records that the operation fires no more events (it ended
// early: cancelled by a plugin, or failed).
func (q *Sequence) PassedAll() { q.Passed(q.order...) }

// allPassedLocked reports whether every event m's plugin may handle has
// passed: the configured ones, and once it has started those it said it
// handles. A plugin whose events are unknown and that has not started
// waits for the end.
func (q *Sequence) allPassedLocked(m *member) bool {
	events := m.configured
	select {
	case <-m.started:
		if m.startErr == nil {
			events = append(slices.Clone(events), m.sup.Description().Events...)
		}
	default:
		if events == nil {
			return false
		}
	}
	for _, e := range events {
		if !q.passed[e] && slices.Contains(q.order, e) {
			return false
		}
	}
	return true
}

// stop ends m's plugin once, in the background: a start under way is cut
// short at Describe (the process start and handshake are bounded by
// Options.StartTimeout), then the plugin is stopped as at the end of a command (Shutdown,
// so its Close runs, then its process group is killed and reaped).
func (q *Sequence) stop(m *member) {
	m.stopOnce.Do(func() {
		go func() {
			defer close(m.stopped)
			m.startOnce.Do(func() { close(m.started) }) // never started: nothing to wait for
			m.cancel()
			<-m.started
			<-m.checked // its open binary is closed by StopNow
			m.sup.StopNow(context.Background())
		}()
	})
}

// Stop stops every plugin still running and waits until all of the
// sequence's plugins have stopped, those stopped in the background too.
// Each plugin gets at most 2 s to answer Shutdown before it is killed.
func (q *Sequence) Stop() {
	q.mu.Lock()
	members := slices.Clone(q.members)
	q.mu.Unlock()
	for _, m := range members {
		q.stop(m)
	}
	for _, m := range members {
		<-m.stopped
	}
}
