package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pith-dev/pith/hooks"
)

// DefaultTimeout bounds a plugin call when the plugin sets no timeout.
const DefaultTimeout = 5 * time.Second

// Options configure a Dispatcher.
type Options struct {
	Logger hclog.Logger
	// DefaultTimeout applies to plugins without a timeout; zero means
	// DefaultTimeout.
	DefaultTimeout time.Duration
	// Observe, when set, is called after every plugin call (metrics). It
	// must be fast and safe for concurrent use. An operation that wants
	// its own calls (a hook timeline) adds an observer to its context with
	// WithObserver.
	Observe func(hooks.Observation)
	// Host, when set, is put into the context of every call for in-process
	// handlers to find with HostFromContext.
	Host hooks.HostAPI
}

// Dispatcher calls plugins for each event and combines their results as
// docs/behaviour.md §13 says. It is safe for concurrent use; SetPlugins swaps the plugin
// set atomically, and each dispatch works on the set it started with.
type Dispatcher struct {
	log     hclog.Logger
	timeout time.Duration
	observe func(hooks.Observation)
	host    hooks.HostAPI
	set     atomic.Pointer[pluginSet]
}

// pluginSet is one generation of plugins. Every dispatch holds its read
// lock from start to end, so SetPlugins can wait for the dispatches of the
// generation it replaced before the caller stops those plugins.
type pluginSet struct {
	list    []hooks.Plugin
	rw      sync.RWMutex
	retired bool // set under rw's write lock once drained
}

// NewDispatcher returns a Dispatcher with the given plugins (see SetPlugins).
func NewDispatcher(opts Options, plugins ...hooks.Plugin) (*Dispatcher, error) {
	d := &Dispatcher{log: opts.Logger, timeout: opts.DefaultTimeout, observe: opts.Observe, host: opts.Host}
	if d.log == nil {
		d.log = hclog.NewNullLogger()
	}
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	if err := d.SetPlugins(plugins); err != nil {
		return nil, err
	}
	return d, nil
}

// SetPlugins replaces the plugin set. Names must be unique (they namespace
// preserveData). Dispatches already running keep the set they started
// with; SetPlugins returns once all of them have finished, so the caller
// may then stop the plugins the new set no longer has (a config reload
// must not drop an event: docs/behaviour.md §14).
func (d *Dispatcher) SetPlugins(plugins []hooks.Plugin) error {
	list := make([]hooks.Plugin, 0, len(plugins))
	seen := make(map[string]bool, len(plugins))
	for _, p := range plugins {
		if p == nil {
			continue
		}
		name := p.Info().Name
		if name == "" {
			return errors.New("hooks: a plugin has no name")
		}
		if seen[name] {
			return fmt.Errorf("hooks: plugin name %q is used twice", name)
		}
		seen[name] = true
		list = append(list, p)
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i].Info(), list[j].Info()
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return a.Order < b.Order
	})
	if old := d.set.Swap(&pluginSet{list: list}); old != nil {
		old.rw.Lock()
		old.retired = true
		old.rw.Unlock()
	}
	return nil
}

// Plugins returns the current plugin set in call order.
func (d *Dispatcher) Plugins() []hooks.Plugin {
	return append([]hooks.Plugin(nil), d.snapshot()...)
}

// Has reports whether any plugin handles event, so a caller can skip
// building a payload nobody reads.
func (d *Dispatcher) Has(event hooks.EventID) bool {
	for _, p := range d.snapshot() {
		if p.Implements(event) {
			return true
		}
	}
	return false
}

func (d *Dispatcher) snapshot() []hooks.Plugin {
	if s := d.set.Load(); s != nil {
		return s.list
	}
	return nil
}

// acquire pins the current plugin set for one dispatch; release unpins it.
func (d *Dispatcher) acquire() (set *pluginSet, release func()) {
	for {
		s := d.set.Load()
		if s == nil {
			return &pluginSet{}, func() {}
		}
		s.rw.RLock()
		if !s.retired {
			return s, s.rw.RUnlock
		}
		s.rw.RUnlock() // swapped out meanwhile: take the new set
	}
}

// handling returns the plugins of the pinned set that handle event, and
// the release to call when the dispatch is done.
func (d *Dispatcher) handling(event hooks.EventID) ([]hooks.Plugin, func()) {
	set, release := d.acquire()
	var out []hooks.Plugin
	for _, p := range set.list {
		if p.Implements(event) {
			out = append(out, p)
		}
	}
	return out, release
}

// BeforeCompact runs the plugins in order; the first cancel or valid
// compaction ends the chain. A compaction that fails validation against lim
// is rejected, logged and treated as no result. The error is non-nil only
// when ctx was cancelled or a `failure: closed` plugin failed (ErrPluginFailed).
func (d *Dispatcher) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent, lim hooks.CompactionLimits) (hooks.BeforeCompactOutcome, error) {
	ps, release := d.handling(hooks.EventBeforeCompact)
	defer release()
	for i, p := range ps {
		evc := BoundBeforeCompact(*ev, p.Info().Limits)
		start := time.Now()
		res, err := call(ctx, d, p, hooks.EventBeforeCompact, ev.SessionID, func(ctx context.Context) (*hooks.BeforeCompactResult, error) {
			return p.BeforeCompact(ctx, evc)
		})
		if err == nil {
			err = overLimit(CheckBeforeCompactResult(res, p.Info().Limits))
		}
		if err != nil {
			if ferr := d.failed(ctx, p, hooks.EventBeforeCompact, start, err); ferr != nil {
				return hooks.BeforeCompactOutcome{}, ferr
			}
			continue
		}
		name := p.Info().Name
		switch {
		case res == nil:
		case res.Cancel:
			d.ok(ctx, p, hooks.EventBeforeCompact, start, hooks.ResultCancel, res.CancelReason)
			d.log.Info("plugin cancelled the compaction", "plugin", name, "reason", res.CancelReason)
			d.skipped(hooks.EventBeforeCompact, ps[i+1:])
			return hooks.BeforeCompactOutcome{Cancelled: true, CancelReason: res.CancelReason, Plugin: name}, nil
		case res.Compaction != nil:
			if verr := ValidateCompaction(res.Compaction, lim); verr != nil {
				d.rejected(ctx, p, hooks.EventBeforeCompact, start, verr)
				continue
			}
			d.ok(ctx, p, hooks.EventBeforeCompact, start, hooks.ResultCompaction, "")
			d.log.Info("plugin supplied the compaction", "plugin", name)
			d.skipped(hooks.EventBeforeCompact, ps[i+1:])
			return hooks.BeforeCompactOutcome{Compaction: res.Compaction, Plugin: name}, nil
		}
		d.ok(ctx, p, hooks.EventBeforeCompact, start, hooks.ResultNoOpinion, "")
	}
	return hooks.BeforeCompactOutcome{}, nil
}

// Compacting runs every plugin concurrently and combines the results in
// priority order.
func (d *Dispatcher) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (hooks.CompactingOutcome, error) {
	ps, release := d.handling(hooks.EventCompacting)
	defer release()
	results := make([]*hooks.CompactingResult, len(ps))
	errs := make([]error, len(ps))
	d.fanOut(ctx, ps, hooks.EventCompacting, func(ctx context.Context, i int, p hooks.Plugin) (string, error) {
		evc := *ev
		res, err := call(ctx, d, p, hooks.EventCompacting, ev.SessionID, func(ctx context.Context) (*hooks.CompactingResult, error) {
			return p.Compacting(ctx, &evc)
		})
		if err == nil {
			err = overLimit(CheckCompactingResult(res, p.Info().Limits))
		}
		if err != nil {
			return "", err // nothing of a failed or refused result is used
		}
		results[i] = res
		return compactingResult(res), nil
	}, errs)
	if err := firstErr(errs); err != nil {
		return hooks.CompactingOutcome{}, err
	}
	var out hooks.CompactingOutcome
	var preserve bytes.Buffer
	for i, p := range ps {
		res := results[i]
		if res == nil {
			continue
		}
		name := p.Info().Name
		out.Context = append(out.Context, res.Context...)
		for _, m := range res.Messages {
			out.Messages = append(out.Messages, hooks.PluginMessage{Plugin: name, InjectedMessage: m})
		}
		if res.Prompt != "" {
			if out.Prompt == "" {
				out.Prompt, out.PromptFrom = res.Prompt, name
			} else {
				d.log.Warn("ignoring a later plugin's compaction prompt: the first one wins", "plugin", name, "used", out.PromptFrom)
			}
		}
		if len(res.PreserveData) > 0 {
			if !json.Valid(res.PreserveData) {
				d.log.Error("ignoring preserveData that is not valid JSON", "plugin", name, "event", hooks.EventCompacting)
				continue
			}
			if preserve.Len() == 0 {
				preserve.WriteByte('{')
			} else {
				preserve.WriteByte(',')
			}
			key, _ := json.Marshal(name)
			preserve.Write(key)
			preserve.WriteByte(':')
			if err := json.Compact(&preserve, res.PreserveData); err != nil {
				// Unreachable after json.Valid; keep the object well-formed anyway.
				preserve.WriteString("null")
			}
		}
	}
	if preserve.Len() > 0 {
		preserve.WriteByte('}')
		out.PreserveData = preserve.Bytes()
	}
	return out, nil
}

// Compact notifies every plugin concurrently and returns when all are done or
// timed out. The compaction is already saved, so failures cannot undo it: the
// error joins the failures of `failure: closed` plugins for the caller to
// report.
func (d *Dispatcher) Compact(ctx context.Context, ev *hooks.CompactEvent) error {
	ps, release := d.handling(hooks.EventCompact)
	defer release()
	errs := make([]error, len(ps))
	d.fanOut(ctx, ps, hooks.EventCompact, func(ctx context.Context, _ int, p hooks.Plugin) (string, error) {
		evc := *ev
		_, err := call(ctx, d, p, hooks.EventCompact, ev.SessionID, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, p.Compact(ctx, &evc)
		})
		return hooks.ResultNotified, err
	}, errs)
	return errors.Join(errs...)
}

// BeforeTree runs the plugins in order; the first cancel or valid summary
// ends the chain. Instructions and label: the first non-empty one wins.
func (d *Dispatcher) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent, lim hooks.SummaryLimits) (hooks.BeforeTreeOutcome, error) {
	var out hooks.BeforeTreeOutcome
	var instrFrom, labelFrom string
	ps, release := d.handling(hooks.EventBeforeTree)
	defer release()
	for i, p := range ps {
		evc := boundBeforeTree(*ev, p.Info().Limits)
		start := time.Now()
		res, err := call(ctx, d, p, hooks.EventBeforeTree, ev.SessionID, func(ctx context.Context) (*hooks.BeforeTreeResult, error) {
			return p.BeforeTree(ctx, evc)
		})
		if err == nil {
			err = overLimit(CheckBeforeTreeResult(res, p.Info().Limits))
		}
		if err != nil {
			if ferr := d.failed(ctx, p, hooks.EventBeforeTree, start, err); ferr != nil {
				return hooks.BeforeTreeOutcome{}, ferr
			}
			continue
		}
		if res == nil {
			d.ok(ctx, p, hooks.EventBeforeTree, start, hooks.ResultNoOpinion, "")
			continue
		}
		name := p.Info().Name
		if !res.Cancel && res.Summary != nil {
			if verr := ValidateSummary(res.Summary, lim); verr != nil {
				d.rejected(ctx, p, hooks.EventBeforeTree, start, verr)
				continue
			}
		}
		if res.Cancel {
			d.ok(ctx, p, hooks.EventBeforeTree, start, hooks.ResultCancel, res.CancelReason)
		} else {
			d.ok(ctx, p, hooks.EventBeforeTree, start, beforeTreeResult(res), "")
		}
		if res.CustomInstructions != "" {
			if instrFrom == "" {
				out.CustomInstructions, out.ReplaceInstructions, instrFrom = res.CustomInstructions, res.ReplaceInstructions, name
			} else {
				d.log.Warn("ignoring a later plugin's instructions: the first ones win", "plugin", name, "used", instrFrom)
			}
		}
		if res.Label != "" {
			if labelFrom == "" {
				out.Label, labelFrom = res.Label, name
			} else {
				d.log.Warn("ignoring a later plugin's label: the first one wins", "plugin", name, "used", labelFrom)
			}
		}
		if res.Cancel {
			d.log.Info("plugin cancelled the navigation", "plugin", name, "reason", res.CancelReason)
			out.Cancelled, out.CancelReason, out.Plugin = true, res.CancelReason, name
			d.skipped(hooks.EventBeforeTree, ps[i+1:])
			return out, nil
		}
		if res.Summary != nil {
			out.Summary, out.Plugin = res.Summary, name
			d.skipped(hooks.EventBeforeTree, ps[i+1:])
			return out, nil
		}
	}
	return out, nil
}

// Tree notifies every plugin concurrently, like Compact.
func (d *Dispatcher) Tree(ctx context.Context, ev *hooks.TreeEvent) error {
	ps, release := d.handling(hooks.EventTree)
	defer release()
	errs := make([]error, len(ps))
	d.fanOut(ctx, ps, hooks.EventTree, func(ctx context.Context, _ int, p hooks.Plugin) (string, error) {
		evc := *ev
		_, err := call(ctx, d, p, hooks.EventTree, ev.SessionID, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, p.Tree(ctx, &evc)
		})
		return hooks.ResultNotified, err
	}, errs)
	return errors.Join(errs...)
}

// overLimit turns a result over the plugin's limits into the call's
// failure: unlike an invalid result, which is skipped, it falls under the
// plugin's failure policy, as the configuration documents.
func overLimit(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("result refused: %w", err)
}

// skipped logs the plugins a chain did not reach, so an operator can see
// why a plugin was not called.
func (d *Dispatcher) skipped(event hooks.EventID, rest []hooks.Plugin) {
	if len(rest) == 0 || !d.log.IsDebug() {
		return
	}
	names := make([]string, len(rest))
	for i, p := range rest {
		names[i] = p.Info().Name
	}
	d.log.Debug("chain ended; later plugins not called", "event", event, "plugins", names)
}

// fanOut runs fn for every plugin concurrently and records, per plugin, the
// error the failure policy yields (nil for success or an open failure); fn
// returns what a successful call came to, for the observers.
func (d *Dispatcher) fanOut(ctx context.Context, ps []hooks.Plugin, event hooks.EventID, fn func(context.Context, int, hooks.Plugin) (result string, err error), errs []error) {
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			result, err := fn(ctx, i, p)
			if err != nil {
				errs[i] = d.failed(ctx, p, event, start, err)
				return
			}
			d.ok(ctx, p, event, start, result, "")
		}()
	}
	wg.Wait()
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// errAborted marks a call cut short by the operation's own cancellation.
var errAborted = errors.New("operation cancelled")

// call runs fn under the plugin's deadline. The handler runs in its own
// goroutine so that one ignoring its context cannot hold the operation past
// the deadline; a panic becomes an error.
// ContextBound is implemented by plugins whose calls always return once
// their context ends, such as the gRPC client of a plugin subprocess. The
// Dispatcher calls them directly; other plugins (in-process handlers that
// might ignore ctx) run under a watchdog goroutine so a hung handler cannot
// hang the host.
type ContextBound interface {
	BoundByContext() bool
}

func call[R any](ctx context.Context, d *Dispatcher, p hooks.Plugin, event hooks.EventID, sessionID string, fn func(context.Context) (R, error)) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("%w: %w", errAborted, err)
	}
	timeout := p.Info().Timeout
	if timeout <= 0 {
		timeout = d.timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host := d.host
	if h, ok := hooks.HostFromContext(cctx); ok {
		host = h
	}
	if host != nil {
		// A capability for this call's session, ended with the call.
		scoped := NewScopedHost(host, Scope{SessionID: sessionID, Limits: p.Info().Limits})
		defer scoped.Revoke()
		cctx = hooks.WithHost(cctx, scoped)
	}
	type answer struct {
		r   R
		err error
	}
	if cp, ok := p.(ContextBound); ok && cp.BoundByContext() {
		// The plugin returns when cctx ends (a gRPC call does), so no
		// watchdog goroutine is needed: one scheduling hop less per call.
		a := func() (a answer) {
			defer func() {
				if v := recover(); v != nil {
					d.log.Error("plugin handler panicked", "plugin", p.Info().Name, "event", event, "panic", v, "stack", string(debug.Stack()))
					a = answer{err: fmt.Errorf("%w: %v", hooks.ErrPanic, v)}
				}
			}()
			r, err := fn(cctx)
			return answer{r, err}
		}()
		if a.err != nil && ctx.Err() != nil {
			return zero, fmt.Errorf("%w: %w", errAborted, ctx.Err())
		}
		if a.err != nil && deadlinePassed(cctx) {
			return zero, fmt.Errorf("%w after %s: %w", hooks.ErrTimeout, timeout, a.err)
		}
		return a.r, a.err
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				d.log.Error("plugin handler panicked", "plugin", p.Info().Name, "event", event, "panic", v, "stack", string(debug.Stack()))
				ch <- answer{err: fmt.Errorf("%w: %v", hooks.ErrPanic, v)}
			}
		}()
		r, err := fn(cctx)
		ch <- answer{r, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil && ctx.Err() != nil {
			return zero, fmt.Errorf("%w: %w", errAborted, ctx.Err())
		}
		if a.err != nil && deadlinePassed(cctx) {
			// However the plugin or transport phrased it, the call failed
			// because its deadline passed.
			return zero, fmt.Errorf("%w after %s: %w", hooks.ErrTimeout, timeout, a.err)
		}
		return a.r, a.err
	case <-cctx.Done():
		if ctx.Err() != nil {
			return zero, fmt.Errorf("%w: %w", errAborted, ctx.Err())
		}
		return zero, fmt.Errorf("%w after %s", hooks.ErrTimeout, timeout)
	}
}

// failed applies the failure policy to a failed call: it logs and observes
// the failure and returns the error the operation must stop with, or nil
// when the plugin fails open.
func (d *Dispatcher) failed(ctx context.Context, p hooks.Plugin, event hooks.EventID, start time.Time, err error) error {
	info := p.Info()
	outcome := hooks.OutcomeError
	switch {
	case errors.Is(err, errAborted):
		d.observeCall(ctx, event, info.Name, start, hooks.OutcomeAborted, err, hooks.ResultAborted, err.Error())
		return fmt.Errorf("hook %s: %w", event, context.Cause(ctx))
	case errors.Is(err, hooks.ErrTimeout):
		outcome = hooks.OutcomeTimeout
	case errors.Is(err, hooks.ErrPanic):
		outcome = hooks.OutcomePanic
	}
	policy := "; failure: open, result ignored"
	if info.Failure == hooks.FailureClosed || errors.Is(err, ErrChecksumMismatch) {
		policy = "; failure: closed, operation cancelled"
	}
	d.observeCall(ctx, event, info.Name, start, outcome, err, hooks.ResultFailure, string(outcome)+": "+err.Error()+policy)
	if errors.Is(err, ErrPayloadTooLarge) {
		// Not the plugin's doing, but its verdict is missing all the same:
		// say so loudly, then apply its policy.
		d.log.Error("host error: the event could not be sent to the plugin", "plugin", info.Name, "event", event, "error", err, "failure", info.Failure)
	}
	if errors.Is(err, ErrChecksumMismatch) {
		d.log.Error("plugin binary does not match its sha256; cancelling the operation whatever its failure policy", "plugin", info.Name, "event", event, "error", err)
		return &hooks.PluginError{Plugin: info.Name, Event: event, Err: err}
	}
	if info.Failure == hooks.FailureClosed {
		d.log.Error("plugin failed; its failure policy is closed, cancelling the operation", "plugin", info.Name, "event", event, "error", err)
		return &hooks.PluginError{Plugin: info.Name, Event: event, Err: err}
	}
	d.log.Warn("plugin failed; ignoring its result", "plugin", info.Name, "event", event, "error", err)
	return nil
}

func (d *Dispatcher) rejected(ctx context.Context, p hooks.Plugin, event hooks.EventID, start time.Time, err error) {
	name := p.Info().Name
	d.observeCall(ctx, event, name, start, hooks.OutcomeRejected, err, hooks.ResultRejected, err.Error()+"; skipped")
	d.log.Error("rejected a plugin's result", "plugin", name, "event", event, "error", err)
}

func (d *Dispatcher) ok(ctx context.Context, p hooks.Plugin, event hooks.EventID, start time.Time, result, reason string) {
	d.observeCall(ctx, event, p.Info().Name, start, hooks.OutcomeOK, nil, result, reason)
}

// observeCall reports one finished call to Options.Observe and to the
// operation's own observer, if its context carries one.
func (d *Dispatcher) observeCall(ctx context.Context, event hooks.EventID, plugin string, start time.Time, outcome hooks.Outcome, err error, result, reason string) {
	local := observerFrom(ctx)
	if d.observe == nil && local == nil {
		return
	}
	o := hooks.Observation{Event: event, Plugin: plugin, Duration: time.Since(start), Outcome: outcome, Err: err, Result: result, Reason: reason}
	if d.observe != nil {
		d.observe(o)
	}
	if local != nil {
		local(o)
	}
}

// compactingResult names what a session.compacting answer contributed.
func compactingResult(res *hooks.CompactingResult) string {
	if res == nil {
		return hooks.ResultNoOpinion
	}
	var parts []string
	if len(res.Context) > 0 {
		parts = append(parts, fmt.Sprintf("%d context lines", len(res.Context)))
	}
	if res.Prompt != "" {
		parts = append(parts, "prompt")
	}
	if len(res.Messages) > 0 {
		parts = append(parts, fmt.Sprintf("%d messages", len(res.Messages)))
	}
	if len(res.PreserveData) > 0 {
		parts = append(parts, "preserveData")
	}
	if len(parts) == 0 {
		return hooks.ResultNoOpinion
	}
	return strings.Join(parts, " + ")
}

// beforeTreeResult names what a session_before_tree answer that did not
// cancel contributed.
func beforeTreeResult(res *hooks.BeforeTreeResult) string {
	var parts []string
	if res.Summary != nil {
		parts = append(parts, hooks.ResultSummary)
	}
	if res.CustomInstructions != "" {
		parts = append(parts, "instructions")
	}
	if res.Label != "" {
		parts = append(parts, "label")
	}
	if len(parts) == 0 {
		return hooks.ResultNoOpinion
	}
	return strings.Join(parts, " + ")
}

// deadlinePassed reports whether ctx's deadline is over. The clock is read
// too: under load the context's timer can fire after the transport has
// already reported the expired call (the plugin's side enforces the same
// deadline).
func deadlinePassed(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
