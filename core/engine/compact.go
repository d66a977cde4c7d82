package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// run is one compaction in flight. Until it commits (just before the
// entry is appended) AbortCompaction cancels it; after, it completes.
type run struct {
	ctx       context.Context
	cancel    context.CancelFunc
	committed bool
}

func (s *Session) startRun(parent context.Context) *run {
	ctx, cancel := context.WithCancel(parent)
	r := &run{ctx: ctx, cancel: cancel}
	s.abortMu.Lock()
	s.runs[r] = struct{}{}
	s.abortMu.Unlock()
	return r
}

func (s *Session) endRun(r *run) {
	s.abortMu.Lock()
	delete(s.runs, r)
	s.abortMu.Unlock()
	r.cancel()
}

// commit marks r as past the point of no return, unless it was aborted.
func (s *Session) commit(r *run) bool {
	s.abortMu.Lock()
	defer s.abortMu.Unlock()
	if r.ctx.Err() != nil {
		return false
	}
	r.committed = true
	return true
}

// AbortCompaction cancels the running compaction, manual or automatic
// (docs/behaviour.md §9.7). A compaction aborted before its entry is appended leaves
// the session file and the live context unchanged and fails with
// ErrAborted; one already appending completes.
func (s *Session) AbortCompaction() {
	s.abortMu.Lock()
	defer s.abortMu.Unlock()
	for r := range s.runs {
		if !r.committed {
			r.cancel()
		}
	}
}

// compact runs one compaction under the session's lease, which it takes
// first (holdLease): the automatic compactions. The caller holds the
// operation lock.
func (s *Session) compact(ctx context.Context, st Settings, reason Reason, instructions string) (*Result, error) {
	held, release, err := s.holdLease(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.compactHeld(held, st, reason, instructions, runMode{})
}

// runMode is what sets a proposed compaction (ProposeCompaction) apart
// from a saved one; the zero value saves.
type runMode struct {
	// cut is the first kept entry the session's owner chose, honoured
	// instead of Pith's own cut; "" for Pith's own.
	cut string
	// propose, when set, stops the run at its commit point: it is filled
	// with what would be saved, and nothing is written or notified.
	propose *Proposal
}

// compactHeld runs one compaction with its start and end events under a
// lease the caller took: ctx is the context holdLease returned, so losing
// the lease aborts the compaction. A manual compaction takes the lease
// itself, to stop the agent only once the compaction can run. The caller
// holds the operation lock.
func (s *Session) compactHeld(ctx context.Context, st Settings, reason Reason, instructions string, mode runMode) (*Result, error) {
	if reason == ReasonThreshold && mode.propose == nil && !st.above(s.ContextTokens()) {
		// Taking a shared session's lease caught this host up with the
		// others: one of them compacted meanwhile, and the context is
		// under the threshold again. Nothing is due, nothing failed.
		return nil, errNoLongerDue
	}
	tl := &dispatch.Timeline{}
	r := s.startRun(dispatch.WithObserver(ctx, tl.Observe))
	defer s.endRun(r)
	before := s.ContextTokens()
	s.emit(Event{Kind: EventCompactionStart, Reason: reason, TokensBefore: before})
	s.log.Info("compaction started", "reason", reason, "tokens", before)

	res, err := s.pipeline(r, st, reason, instructions, tl, mode)
	if err != nil && !r.committed && r.ctx.Err() != nil && !errors.Is(err, ErrCancelled) {
		err = fmt.Errorf("%w: %w", ErrAborted, context.Cause(r.ctx))
	}

	end := Event{Kind: EventCompactionEnd, Reason: reason, TokensBefore: before, Timeline: tl.Steps()}
	if err != nil {
		end.Aborted = errors.Is(err, ErrAborted)
		end.Cancelled = errors.Is(err, ErrCancelled)
		if ce := (*cancelError)(nil); errors.As(err, &ce) {
			end.Plugin = ce.plugin // who cancelled, as a saved run names who supplied
		}
		end.Error = err.Error()
		if reason != ReasonManual {
			end.Error = (&AutoCompactionError{Reason: reason, Err: err}).Error()
		}
		// A manual compaction's caller gets the error and shows it; an
		// automatic one happens behind the caller's back, so log it.
		level := hclog.Warn
		if reason == ReasonManual {
			level = hclog.Debug
		}
		s.log.Log(level, "compaction did not complete", "reason", reason, "error", err)
		s.emit(end)
		return nil, err
	}
	if p := mode.propose; p != nil {
		end.Proposed, end.TokensBefore, end.Plugin = true, p.TokensBefore, p.Plugin
		s.log.Info("compaction proposed", "reason", reason, "tokens_before", p.TokensBefore,
			"summarized", p.MessagesSummarized, "from_hook", p.FromHook)
		s.emit(end)
		return nil, nil
	}
	end.TokensBefore, end.TokensAfter = res.TokensBefore, res.TokensAfter
	end.EntryID, end.Plugin = res.Entry.ID, res.Plugin
	end.WillRetry = reason == ReasonOverflow
	if reason == ReasonThreshold && st.AutoContinue {
		end.Continue = ContinuePrompt
	}
	s.log.Info("compaction saved", "reason", reason, "entry", res.Entry.ID, "tokens_before", res.TokensBefore,
		"tokens_after", res.TokensAfter, "summarized", res.MessagesSummarized, "from_hook", res.FromHook)
	s.emit(end)
	return res, nil
}

// holdLease takes the session's lease for a compaction when the backend
// is shared between hosts, before any event is emitted: a session another
// host is compacting is skipped quietly, once. The context it returns
// ends when the lease is lost, which aborts the compaction. The caller
// holds the operation lock: taking the lease adds what other hosts wrote
// to the backend's tree, which operations under that lock read, and
// resyncs the live context from it.
func (s *Session) holdLease(ctx context.Context) (context.Context, func(), error) {
	l, ok := s.store.(session.Leaser)
	if !ok {
		return ctx, func() {}, nil
	}
	held, release, err := l.HoldLease(ctx)
	if errors.Is(err, session.ErrLeaseHeld) {
		s.log.Debug("another host holds the session's lease", "error", err)
		return nil, nil, elsewhereError{err}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("take the session's lease: %w", err)
	}
	// The backend caught up with the other hosts: so does the context
	// the compaction starts from.
	s.resyncLocked()
	return held, release, nil
}

// elsewhereError is ErrCompactingElsewhere in one line; it also matches
// the lease error (with the holder) it comes from.
type elsewhereError struct{ lease error }

func (e elsewhereError) Error() string   { return ErrCompactingElsewhere.Error() }
func (e elsewhereError) Unwrap() []error { return []error{ErrCompactingElsewhere, e.lease} }

// pipeline is docs/behaviour.md §9–§10 for one compaction: prepare, ask
// the plugins, summarize, check, persist, rebuild, notify — each step a
// function below.
func (s *Session) pipeline(r *run, st Settings, reason Reason, instructions string, tl *dispatch.Timeline, mode runMode) (*Result, error) {
	ctx := r.ctx
	path := s.store.Tree().Path(s.store.Leaf())
	cs := st.compaction()
	cs.FirstKeptEntryID = mode.cut
	prep, err := compaction.Prepare(path, cs)
	if err != nil {
		return nil, err
	}
	// Persist decides at commit time from what was appended after these.
	prep.FileEntries = len(s.store.Tree().Entries)

	sum, err := s.beforeCompact(ctx, st, reason, instructions, path, prep)
	if err != nil {
		return nil, err
	}
	if sum.supplied == nil {
		if err := s.generate(ctx, st, reason, instructions, prep, &sum); err != nil {
			return nil, err
		}
	}
	stage(ctx, StageCheck)
	extra, err := s.extras(st, reason, path, prep, &sum)
	if err != nil {
		return nil, err
	}

	if !s.commit(r) {
		return nil, ctx.Err()
	}
	recordRun(sum.gen, reason, tl.Steps())
	if mode.propose != nil {
		// The seam of the propose mode: everything up to here is the
		// compaction that would be saved; its owner writes it instead.
		return nil, s.fillProposal(mode.propose, reason, prep, &sum, extra)
	}
	entry, err := s.persist(prep, &sum, extra)
	if err != nil {
		return nil, err
	}
	s.notifyCompacted(ctx, reason, entry, sum.supplied != nil)
	return s.result(reason, prep, &sum, entry), nil
}

// draftSummary is what a compaction saves, as the steps of pipeline make it.
type draftSummary struct {
	// supplied is a plugin's whole compaction (session_before_compact),
	// plugin its name; nil when the summarizer makes it.
	supplied *hooks.Compaction
	plugin   string
	gen      *compaction.Result
	// preserve is the plugins' data for the entry; injected their
	// messages to put after it (session.compacting).
	preserve json.RawMessage
	injected []session.Draft
	explored *exploreOutcome
}

// beforeCompact asks the plugins (session_before_compact), which may
// cancel the compaction or supply one; a supplied one that fails the
// checks is reported and the built-in one is made instead.
func (s *Session) beforeCompact(ctx context.Context, st Settings, reason Reason, instructions string, path []*session.Entry, prep *compaction.Preparation) (draftSummary, error) {
	var sum draftSummary
	if !handles(s.opts.Hooks, hooks.EventBeforeCompact) {
		return sum, nil
	}
	stage(ctx, StageBeforeCompact)
	lim := compactionLimits(path, prep, st)
	out, err := s.opts.Hooks.BeforeCompact(ctx, beforeCompactEvent(s.sessionID, path, prep, instructions, reason), lim)
	if err != nil {
		return sum, s.hookFailed(ctx, hooks.EventBeforeCompact, reason, err)
	}
	switch {
	case out.Cancelled:
		msg := fmt.Sprintf("%v by plugin %q", ErrCancelled, out.Plugin)
		if out.CancelReason != "" {
			msg += ": " + out.CancelReason
		}
		return sum, &cancelError{msg: msg, plugin: out.Plugin, reason: out.CancelReason}
	case out.Compaction != nil:
		// Checked again here: Hooks need not be a validating Dispatcher.
		if verr := dispatch.ValidateCompaction(out.Compaction, lim); verr != nil {
			s.hookError(reason, out.Plugin, hooks.EventBeforeCompact, fmt.Errorf("compaction rejected, using the built-in one: %w", verr))
			return sum, nil
		}
		c := out.Compaction
		sum.supplied, sum.plugin, sum.preserve = c, out.Plugin, c.PreserveData
		sum.gen = &compaction.Result{
			Summary:          c.Summary,
			ShortSummary:     c.ShortSummary,
			FirstKeptEntryID: c.FirstKeptEntryID,
			TokensBefore:     cmp.Or(c.TokensBefore, prep.TokensBefore),
			RawDetails:       c.Details,
		}
	}
	return sum, nil
}

// generate makes the summary: the plugins' session.compacting first
// (context lines, prompt, data, messages), then the summarizer or the
// explore worker.
func (s *Session) generate(ctx context.Context, st Settings, reason Reason, instructions string, prep *compaction.Preparation, sum *draftSummary) error {
	ropts := compaction.RequestOptions{
		Instructions:     instructions,
		ModelOutputLimit: st.SummarizerOutputLimit,
		InputBudget:      st.SummarizerContextWindow,
		Reasoning:        st.Reasoning,
		ShortSummary:     st.ShortSummary,
	}
	if handles(s.opts.Hooks, hooks.EventCompacting) {
		stage(ctx, StageCompacting)
		out, err := s.opts.Hooks.Compacting(ctx, &hooks.CompactingEvent{
			SessionID:          s.sessionID,
			Messages:           rawMessages(prep.MessagesToSummarize),
			TurnPrefixMessages: rawMessages(prep.TurnPrefixMessages),
			Reason:             reason,
			FirstKeptEntryID:   prep.FirstKeptEntryID,
			IsSplitTurn:        prep.IsSplitTurn(),
			TokensBefore:       prep.TokensBefore,
			ReadFiles:          nonNil(prep.ReadFiles),
			ModifiedFiles:      nonNil(prep.ModifiedFiles),
			Workspace:          s.workspaceDir(),
		})
		if err != nil {
			return s.hookFailed(ctx, hooks.EventCompacting, reason, err)
		}
		ropts.ContextLines, ropts.Prompt, sum.preserve = out.Context, out.Prompt, out.PreserveData
		sum.injected = injectedDrafts(out.Messages)
	}
	var err error
	if st.Explore.Enabled {
		stage(ctx, StageExplore)
		sum.gen, sum.explored, err = s.exploreGenerate(ctx, st, reason, prep, ropts)
	} else {
		stage(ctx, StageSummarize)
		if s.opts.Summarizer == nil {
			return ErrNoSummarizer
		}
		sum.gen, err = compaction.Generate(ctx, s.opts.Summarizer, prep, ropts)
	}
	if err != nil {
		return err
	}
	if sum.gen.ShortSummaryErr != nil {
		s.log.Warn("no short summary", "error", sum.gen.ShortSummaryErr)
	}
	return nil
}

// extras are the entries that follow the compaction — the plugins'
// messages first, then the files read back (explore's own choice, or the
// most recently used ones) — and the check that an automatic compaction
// actually gets below the threshold with them.
func (s *Session) extras(st Settings, reason Reason, path []*session.Entry, prep *compaction.Preparation, sum *draftSummary) ([]session.Draft, error) {
	after := estimateAfter(path, sum.gen, s.inContext)
	extra := append(sum.injected, sum.explored.extraDrafts()...)
	for _, d := range sum.injected {
		after += injectedTokens(d)
	}
	if sum.explored != nil && sum.explored.autoRead != nil {
		after += sum.explored.autoRead.Tokens
	} else if rh := s.rehydrate(st, prep); rh != nil {
		extra = append(extra, rh.Draft)
		after += rh.Tokens
	}
	if reason != ReasonManual && st.above(after) {
		return nil, fmt.Errorf("%w: ~%d tokens after compaction, threshold %d (contextWindow %d − reserveTokens %d); lower compaction.keepRecentTokens or use a model with a larger window",
			ErrStillAboveThreshold, after, st.threshold(), st.ContextWindow, st.ReserveTokens)
	}
	return extra, nil
}

// persist saves the compaction and its extras in one write and makes the
// context rebuilt from them the live one.
func (s *Session) persist(prep *compaction.Preparation, sum *draftSummary, extra []session.Draft) (*session.Entry, error) {
	entry, built, err := compaction.Persist(s.store, prep, sum.gen, sum.supplied != nil, sum.preserve, extra...)
	if err != nil {
		return nil, err
	}
	lc := liveContext{acct: newAccounting(), compaction: entryTime(entry)}
	lc.messages = make([]session.Message, 0, len(built.Messages))
	for _, m := range built.Messages {
		if s.inContext(m) {
			lc.messages = append(lc.messages, m)
			lc.acct.trailing += tokens.Estimate(m.Raw)
		}
	}
	lc.countTools()
	s.mu.Lock()
	s.live = lc
	s.mu.Unlock()
	return entry, nil
}

// notifyCompacted tells the plugins (session_compact). The entry is
// saved: the notification runs to its deadline even if the operation is
// cancelled now.
func (s *Session) notifyCompacted(ctx context.Context, reason Reason, entry *session.Entry, fromHook bool) {
	if !handles(s.opts.Hooks, hooks.EventCompact) {
		return
	}
	ev := &hooks.CompactEvent{SessionID: s.sessionID, CompactionEntry: entry.Raw, FromExtension: fromHook}
	if err := s.opts.Hooks.Compact(context.WithoutCancel(ctx), ev); err != nil {
		s.hookError(reason, pluginOf(err), hooks.EventCompact, err)
	}
}

// result describes the saved compaction.
func (s *Session) result(reason Reason, prep *compaction.Preparation, sum *draftSummary, entry *session.Entry) *Result {
	gen := sum.gen
	out := &Result{
		Reason:             reason,
		Entry:              entry,
		Summary:            gen.Summary,
		ShortSummary:       gen.ShortSummary,
		FirstKeptEntryID:   gen.FirstKeptEntryID,
		TokensBefore:       gen.TokensBefore,
		TokensAfter:        s.ContextTokens(),
		MessagesSummarized: len(prep.MessagesToSummarize) + len(prep.TurnPrefixMessages),
		SplitTurn:          prep.IsSplitTurn() && sum.supplied == nil,
		FromHook:           sum.supplied != nil,
		Plugin:             sum.plugin,
		Usage:              gen.Usage,
		Strategy:           StrategySummary,
	}
	if ex := sum.explored; ex != nil {
		out.Strategy, out.Explore = StrategyExplore, &ex.stats
		for _, c := range s.store.Tree().Children(entry.ID) {
			if ex.autoRead != nil && c.Type == "custom_message" {
				out.AutoReadEntry = c
			}
		}
		s.log.Info(ex.describe())
	}
	return out
}

// recordRun writes the compaction's reason and the hook calls made so far
// (session_compact comes after the entry is saved, so only the events'
// timeline has it) into the details the entry will store. A plugin's own
// details get the two keys added when they are a JSON object, and are left
// as they are otherwise: they are the plugin's.
func recordRun(gen *compaction.Result, reason Reason, steps []hooks.TimelineStep) {
	timeline := timelineJSON(steps)
	if len(gen.RawDetails) == 0 {
		gen.Details.Reason, gen.Details.HookTimeline = string(reason), timeline
		return
	}
	gen.RawDetails = annotateDetails(gen.RawDetails, string(reason), timeline)
}

// annotateDetails adds reason (when not "") and the timeline (when not
// nil) to details that are a JSON object, or makes an object of them when
// there are none; other details are a plugin's own and are kept as they
// are.
func annotateDetails(details json.RawMessage, reason string, timeline json.RawMessage) json.RawMessage {
	if len(details) == 0 {
		details = json.RawMessage("{}")
	}
	if !gjson.ParseBytes(details).IsObject() {
		return details
	}
	raw := []byte(details)
	var err error
	if reason != "" {
		if raw, err = sjson.SetBytes(raw, "reason", reason); err != nil {
			return details
		}
	}
	if timeline != nil {
		if raw, err = sjson.SetRawBytes(raw, "hookTimeline", timeline); err != nil {
			return details
		}
	}
	if string(raw) == "{}" {
		return nil
	}
	return raw
}

// timelineJSON is steps as stored in details; nil for none.
func timelineJSON(steps []hooks.TimelineStep) json.RawMessage {
	if len(steps) == 0 {
		return nil
	}
	raw, _ := json.Marshal(steps) // plain strings and numbers: cannot fail
	return raw
}

// estimateAfter is the estimated size of the context the compaction would
// leave: its summary plus the kept path entries, overflow errors left out.
// Usage figures are not used: they all describe the old context.
func estimateAfter(path []*session.Entry, gen *compaction.Result, keep func(session.Message) bool) int {
	// The kept entries are the path's last: found from the end, as a
	// scan from the root compared every id of a long session.
	start := len(path)
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].ID == gen.FirstKeptEntryID {
			start = i
			break
		}
	}
	n := tokens.Estimate(session.NewCompactionSummary(gen.Summary, gen.TokensBefore, "", "").Raw)
	for _, e := range path[start:] {
		if m, ok := session.EntryMessage(e); ok && keep(m) {
			n += tokens.Estimate(m.Raw)
		}
	}
	return n
}

// cancelError is a plugin's cancel; it matches ErrCancelled.
type cancelError struct{ msg, plugin, reason string }

func (e *cancelError) Error() string { return e.msg }
func (e *cancelError) Is(target error) bool {
	return target == ErrCancelled
}

// hookFailed turns a dispatcher error into the compaction's error: the
// operation's own cancellation stays an abort; a failing plugin with
// `failure: closed` is reported as a hook error and fails the compaction.
func (s *Session) hookFailed(ctx context.Context, event hooks.EventID, reason Reason, err error) error {
	if ctx.Err() != nil {
		return err
	}
	s.hookError(reason, pluginOf(err), event, err)
	return err
}

func (s *Session) hookError(reason Reason, plugin string, event hooks.EventID, err error) {
	s.log.Error("hook error", "event", event, "plugin", plugin, "error", err)
	s.emit(Event{Kind: EventHookError, Reason: reason, Plugin: plugin, Error: fmt.Sprintf("%s: %v", event, err)})
}

func pluginOf(err error) string {
	var pe *hooks.PluginError
	if errors.As(err, &pe) {
		return pe.Plugin
	}
	return ""
}

// inContext reports whether a message of a rebuilt context belongs in the
// live list: overflow messages never do. The caller holds the operation
// lock.
func (s *Session) inContext(m session.Message) bool {
	return !s.excluded[m.EntryID] && !isOverflowError(m)
}
