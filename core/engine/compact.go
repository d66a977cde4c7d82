package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summarize/builtin"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/hooks"
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

func (s *Session) summarizer(reason Reason) summary.Summarizer {
	first, second := s.opts.AutoSummarizer, s.opts.Summarizer
	if reason == ReasonManual {
		first, second = second, first
	}
	switch {
	case first != nil:
		return first
	case second != nil:
		return second
	}
	return builtin.New(builtin.Options{})
}

// compact runs one compaction with its start and end events. The caller
// holds the operation lock.
func (s *Session) compact(ctx context.Context, st Settings, reason Reason, instructions string) (*Result, error) {
	tl := &hooks.Timeline{}
	r := s.startRun(hooks.WithObserver(ctx, tl.Observe))
	defer s.endRun(r)
	before := s.ContextTokens()
	s.emit(Event{Kind: EventCompactionStart, Reason: reason, TokensBefore: before})
	s.log.Info("compaction started", "reason", reason, "tokens", before)

	res, err := s.pipeline(r, st, reason, instructions, tl)
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

// pipeline is docs/behaviour.md §9–§10 for one compaction: prepare, the hooks,
// summarize, check, persist, rebuild, notify.
func (s *Session) pipeline(r *run, st Settings, reason Reason, instructions string, tl *hooks.Timeline) (*Result, error) {
	ctx := r.ctx
	leaf := s.store.Leaf()
	path := s.store.Tree().Path(leaf)
	prep, err := compaction.Prepare(path, st.compaction())
	if err != nil {
		return nil, err
	}
	// Persist decides at commit time from what was appended after these.
	prep.FileEntries = len(s.store.Tree().Entries)

	var (
		supplied *hooks.Compaction
		plugin   string
	)
	if handles(s.opts.Hooks, hooks.EventBeforeCompact) {
		lim := compactionLimits(path, prep, st)
		out, err := s.opts.Hooks.BeforeCompact(ctx, beforeCompactEvent(s.sessionID, path, prep, instructions, reason), lim)
		if err != nil {
			return nil, s.hookFailed(ctx, hooks.EventBeforeCompact, reason, err)
		}
		switch {
		case out.Cancelled:
			msg := fmt.Sprintf("%v by plugin %q", ErrCancelled, out.Plugin)
			if out.CancelReason != "" {
				msg += ": " + out.CancelReason
			}
			return nil, &cancelError{msg: msg, plugin: out.Plugin}
		case out.Compaction != nil:
			// Checked again here: Hooks need not be a validating Dispatcher.
			if verr := hooks.ValidateCompaction(out.Compaction, lim); verr != nil {
				s.hookError(reason, out.Plugin, hooks.EventBeforeCompact, fmt.Errorf("compaction rejected, using the built-in one: %w", verr))
			} else {
				supplied, plugin = out.Compaction, out.Plugin
			}
		}
	}

	var (
		gen      *compaction.Result
		preserve json.RawMessage
		explored *exploreOutcome
		injected []session.Draft
	)
	if supplied != nil {
		gen = &compaction.Result{
			Summary:          supplied.Summary,
			ShortSummary:     supplied.ShortSummary,
			FirstKeptEntryID: supplied.FirstKeptEntryID,
			TokensBefore:     supplied.TokensBefore,
			RawDetails:       supplied.Details,
		}
		if gen.TokensBefore == 0 {
			gen.TokensBefore = prep.TokensBefore
		}
		preserve = supplied.PreserveData
	} else {
		ropts := compaction.RequestOptions{
			Instructions:     instructions,
			ModelOutputLimit: st.SummarizerOutputLimit,
			InputBudget:      st.SummarizerContextWindow,
			Reasoning:        st.Reasoning,
			ShortSummary:     st.ShortSummary,
		}
		if handles(s.opts.Hooks, hooks.EventCompacting) {
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
			})
			if err != nil {
				return nil, s.hookFailed(ctx, hooks.EventCompacting, reason, err)
			}
			ropts.ContextLines, ropts.Prompt, preserve = out.Context, out.Prompt, out.PreserveData
			injected = injectedDrafts(out.Messages)
		}
		if st.Explore.Enabled {
			gen, explored, err = s.exploreGenerate(ctx, st, reason, prep, ropts)
		} else {
			generate := s.opts.Generate
			if generate == nil {
				generate = compaction.Generate
			}
			gen, err = generate(ctx, s.summarizer(reason), prep, ropts)
		}
		if err != nil {
			return nil, err
		}
		if gen.ShortSummaryErr != nil {
			s.log.Warn("no short summary", "error", gen.ShortSummaryErr)
		}
	}

	after := estimateAfter(path, gen, s.inContext)
	// Plugins' messages come first after the compaction, then the files.
	extra := append(injected, explored.extraDrafts()...)
	for _, d := range injected {
		after += injectedTokens(d)
	}
	if explored != nil && explored.autoRead != nil {
		after += explored.autoRead.Tokens
	} else if rh := s.rehydrate(st, prep); rh != nil {
		// The explore strategy reads its files itself; the others get the
		// most recently used files back.
		extra = append(extra, rh.Draft)
		after += rh.Tokens
	}
	if reason != ReasonManual && st.above(after) {
		return nil, fmt.Errorf("%w: ~%d tokens after compaction, threshold %d (contextWindow %d − reserveTokens %d); lower compaction.keepRecentTokens or use a model with a larger window",
			ErrStillAboveThreshold, after, st.threshold(), st.ContextWindow, st.ReserveTokens)
	}

	if !s.commit(r) {
		return nil, ctx.Err()
	}
	recordRun(gen, reason, tl.Steps())
	entry, built, err := compaction.Persist(s.store, prep, gen, supplied != nil, preserve, extra...)
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

	if handles(s.opts.Hooks, hooks.EventCompact) {
		// The entry is saved: the notification runs to its deadline even
		// if the operation is cancelled now.
		ev := &hooks.CompactEvent{SessionID: s.sessionID, CompactionEntry: entry.Raw, FromExtension: supplied != nil}
		if err := s.opts.Hooks.Compact(context.WithoutCancel(ctx), ev); err != nil {
			s.hookError(reason, pluginOf(err), hooks.EventCompact, err)
		}
	}
	out := &Result{
		Reason:             reason,
		Entry:              entry,
		Summary:            gen.Summary,
		ShortSummary:       gen.ShortSummary,
		FirstKeptEntryID:   gen.FirstKeptEntryID,
		TokensBefore:       gen.TokensBefore,
		TokensAfter:        lc.acct.tokens(),
		MessagesSummarized: len(prep.MessagesToSummarize) + len(prep.TurnPrefixMessages),
		SplitTurn:          prep.IsSplitTurn() && supplied == nil,
		FromHook:           supplied != nil,
		Plugin:             plugin,
		Usage:              gen.Usage,
		Strategy:           StrategySummary,
	}
	if explored != nil {
		out.Strategy, out.Explore = StrategyExplore, &explored.stats
		for _, c := range s.store.Tree().Children(entry.ID) {
			if explored.autoRead != nil && c.Type == "custom_message" {
				out.AutoReadEntry = c
			}
		}
		s.log.Info(explored.describe())
	}
	return out, nil
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
	start := len(path)
	for i, e := range path {
		if e.ID == gen.FirstKeptEntryID {
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
type cancelError struct{ msg, plugin string }

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
