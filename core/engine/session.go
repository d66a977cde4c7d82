package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/workspace"
	"github.com/tidwall/gjson"
)

// ContinuePrompt is the user message that asks the agent to go on after a
// threshold compaction (docs/behaviour.md §9.3).
const ContinuePrompt = "Continue if you have next steps."

// MaxAutoFailures consecutive automatic compaction failures turn automatic
// compaction off until a manual compaction succeeds (docs/behaviour.md §9.6).
const MaxAutoFailures = 3

// Options configure a Session.
type Options struct {
	// Settings is the initial snapshot; SetSettings replaces it.
	Settings Settings
	// SettingsFunc, when set, is asked for the snapshot at the start of
	// every operation instead (for a configuration store that swaps its
	// value atomically).
	SettingsFunc func() Settings
	// Summarizer writes the summaries of compactions and branch
	// navigations. The engine links no provider: whoever builds it passes
	// one (the configured chain, or the deterministic built-in
	// summarizer). Without one, a compaction or navigation that must
	// generate a summary fails with ErrNoSummarizer.
	Summarizer summary.Summarizer
	// Explorer is the tool-calling model of the explore strategy (docs/behaviour.md
	// §12); nil means the summarizer itself, when it can call tools.
	Explorer summary.ToolCaller
	// Hooks dispatches the compaction hook events; nil means no plugins.
	Hooks Hooks
	// AbortAgent stops the running agent operation; Compact calls it before
	// compacting (on a shared backend, once it holds the session's lease).
	AbortAgent func()
	// Workspaces opens the session's workspace, the directory its
	// header's cwd names, for the parts that read its files
	// (compaction.rehydrate, the explore worker's file tools); nil is
	// workspace.Open, right for a local user's own sessions. A daemon,
	// whose clients write the headers, passes workspace.Within.
	Workspaces workspace.Opener
	Logger     hclog.Logger
}

// Action tells the agent loop what to do after a turn.
type Action int

const (
	// ActionNone: nothing to do.
	ActionNone Action = iota
	// ActionContinue: send Outcome.Prompt as a user message (a threshold
	// compaction with autoContinue).
	ActionContinue
	// ActionRetry: the context was compacted after an overflow; retry the
	// failed request with Messages().
	ActionRetry
)

func (a Action) String() string {
	switch a {
	case ActionContinue:
		return "continue"
	case ActionRetry:
		return "retry"
	}
	return "none"
}

// Outcome is what AfterTurn did with an assistant message.
type Outcome struct {
	// Entry is the message's entry in the session file.
	Entry *session.Entry
	// Overflow: the message is a context overflow (docs/behaviour.md §9.2). It is in the
	// file but not in the live context.
	Overflow bool
	// Stale: the message answered a request made before the latest
	// compaction, so its usage or overflow says nothing about the current
	// context.
	Stale bool
	// Compaction is the saved compaction, nil when none ran or it failed.
	Compaction *Result
	Action     Action
	// Prompt is ContinuePrompt when Action is ActionContinue.
	Prompt string
	// Skipped says why a due automatic compaction did not run, "" otherwise.
	Skipped string
	// Pruned is the tool-output pruning this turn end did, nil for none.
	Pruned *PruneResult
}

// Result describes a saved compaction.
type Result struct {
	Reason Reason
	// Entry is the compaction entry appended to the session.
	Entry            *session.Entry
	Summary          string
	ShortSummary     string
	FirstKeptEntryID string
	// TokensBefore is the context size before (docs/behaviour.md §3); TokensAfter the
	// estimated size of the rebuilt context.
	TokensBefore int
	TokensAfter  int
	// MessagesSummarized counts the messages folded into the summary,
	// turn prefix included.
	MessagesSummarized int
	SplitTurn          bool
	// FromHook: a plugin supplied the compaction; Plugin names it.
	FromHook bool
	Plugin   string
	Usage    summary.Usage
	// Strategy is the strategy that made the summary (summary or explore).
	Strategy string
	// Explore holds the explore strategy's figures; AutoReadEntry is the
	// custom_message entry with its auto-read files and references, nil
	// when it chose none.
	Explore       *explore.Stats
	AutoReadEntry *session.Entry
}

// Session orchestrates one open session file. Create it with New.
type Session struct {
	store     session.Backend
	opts      Options
	log       hclog.Logger
	sessionID string
	settings  atomic.Pointer[Settings]

	// op serializes operations: appends, turns and compactions.
	op chan struct{}

	mu   sync.Mutex // guards the fields below
	live liveContext
	// overflowTried: the current overflow episode had its one recovery.
	overflowTried bool
	autoFailures  int
	autoDisabled  bool
	// lastTrigger is the entry that last triggered an automatic compaction.
	lastTrigger string
	// excluded are overflow messages of this process's lifetime that are
	// not errors (silent overflows), kept out of rebuilt contexts; error
	// overflows are recognised by their text. Used under the op lock.
	excluded map[string]bool

	abortMu sync.Mutex
	runs    map[*run]struct{}

	subs subscribers
}

// New makes a Session over an open store, building the live context from
// the store's current leaf.
func New(store session.Backend, opts Options) *Session {
	s := &Session{store: store, opts: opts, log: opts.Logger, op: make(chan struct{}, 1), runs: make(map[*run]struct{}), excluded: make(map[string]bool)}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	if s.opts.Workspaces == nil {
		s.opts.Workspaces = workspace.Open
	}
	if f := store.File(); f != nil {
		s.sessionID = f.Header.ID
	}
	st := opts.Settings
	s.settings.Store(&st)
	s.live = buildLive(store.Tree(), store.Leaf())
	return s
}

// SetSettings replaces the settings snapshot. Operations already running
// finish on the snapshot they started with.
func (s *Session) SetSettings(st Settings) { s.settings.Store(&st) }

// Settings returns the snapshot the next operation will use.
func (s *Session) Settings() Settings {
	if s.opts.SettingsFunc != nil {
		return s.opts.SettingsFunc()
	}
	return *s.settings.Load()
}

// Subscribe registers fn for every event and returns a function that
// removes it. fn runs on the goroutine of the operation that emits the
// event, so it must return quickly and must not call back into the
// Session's operations.
func (s *Session) Subscribe(fn func(Event)) (unsubscribe func()) { return s.subs.add(fn) }

// Store is the session file.
func (s *Session) Store() session.Backend { return s.store }

// Messages returns the live context. The slice is a snapshot: later turns
// and compactions do not change it.
func (s *Session) Messages() []session.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.live.messages
	return m[:len(m):len(m)]
}

// ContextTokens is the context size of the live list (docs/behaviour.md §3).
func (s *Session) ContextTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live.acct.tokens()
}

// AutoCompactionDisabled reports whether the failure guard has turned
// automatic compaction off.
func (s *Session) AutoCompactionDisabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.autoDisabled
}

func (s *Session) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case s.op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) release() { <-s.op }

func (s *Session) emit(ev Event) {
	ev.Time = time.Now()
	s.subs.emit(ev)
}

// AppendMessages appends agent messages (user, toolResult, bashExecution,
// custom…) as message entries and to the live context. A user message
// starts a new overflow episode.
func (s *Session) AppendMessages(ctx context.Context, msgs ...json.RawMessage) ([]*session.Entry, error) {
	drafts := make([]session.Draft, len(msgs))
	for i, m := range msgs {
		d, err := session.MessageDraft(m)
		if err != nil {
			return nil, fmt.Errorf("append message %d: %w", i+1, err)
		}
		drafts[i] = d
	}
	return s.AppendEntries(ctx, drafts...)
}

// AppendEntries appends entries of any type (custom_message, label,
// model_change, …) and adds what they contribute to the live context
// (docs/behaviour.md §2), keeping the engine's state: the overflow episode, the failure
// guard. A user message starts a new overflow episode. Compactions and
// branch summaries are written by Compact and Navigate, not here.
func (s *Session) AppendEntries(ctx context.Context, drafts ...session.Draft) ([]*session.Entry, error) {
	for i, d := range drafts {
		if d.Type == session.TypeCompaction || d.Type == session.TypeBranchSummary {
			return nil, fmt.Errorf("append entry %d: %s entries are written by Compact and Navigate", i+1, d.Type)
		}
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	prev := s.store.Leaf()
	entries, err := s.store.Append(drafts...)
	if err != nil {
		s.resyncOnConflict(err)
		return nil, err
	}
	s.followOutside(prev, entries[0])
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		m, ok := session.EntryMessage(e)
		if !ok {
			continue
		}
		if m.Role == session.RoleUser {
			s.overflowTried = false
		}
		s.pushLocked(m, true)
	}
	return entries, nil
}

// resyncOnConflict rebuilds the live context after an append refused
// because another host appended to a shared session first: the backend
// has caught up, and the caller's retry must see what the other host
// wrote. The caller holds the operation lock.
func (s *Session) resyncOnConflict(err error) {
	if errors.Is(err, session.ErrConflict) {
		s.resyncLocked()
	}
}

// Resync rebuilds the live context from the backend's entries and leaf:
// for a host that learns another host changed the shared session (after
// the backend read it, e.g. store.Session.Refresh).
func (s *Session) Resync(ctx context.Context) error {
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	s.resyncLocked()
	return nil
}

// followOutside brings the live context up to the parent of first, the
// first entry an append wrote, when that is not prev, the leaf before the
// append: the backend read entries another writer appended (pi, a pith
// command, another host) and put the new ones below them, so the context
// the append extends is the file's, not the one the engine had. The caller
// holds the operation lock.
func (s *Session) followOutside(prev, first *session.Entry) {
	if prev != nil && first.ParentID == prev.ID || prev == nil && first.ParentID == "" {
		return
	}
	tree := s.store.Tree()
	parent := tree.Get(first.ParentID)
	if parent == nil {
		return
	}
	s.resyncTo(parent)
	// A user message among the other writer's entries started a new turn,
	// and with it a new overflow episode, as one appended here does.
	for e := parent; e != nil && (prev == nil || e.ID != prev.ID); e = tree.Get(e.ParentID) {
		if m, ok := session.EntryMessage(e); ok && m.Role == session.RoleUser {
			s.mu.Lock()
			s.overflowTried = false
			s.mu.Unlock()
			break
		}
	}
}

func (s *Session) resyncLocked() { s.resyncTo(s.store.Leaf()) }

// resyncTo rebuilds the live context as it is at leaf.
func (s *Session) resyncTo(leaf *session.Entry) {
	lc := buildLive(s.store.Tree(), leaf)
	kept := lc.messages[:0]
	for _, m := range lc.messages {
		if s.inContext(m) {
			kept = append(kept, m)
		}
	}
	lc.messages = kept
	lc.countTools()
	s.mu.Lock()
	s.live = lc
	s.mu.Unlock()
}

func (s *Session) pushLocked(m session.Message, fresh bool) {
	// Snapshots from Messages are capped at their length, so appending
	// here never writes into what a caller holds.
	s.live.acct.add(len(s.live.messages), m, fresh)
	s.live.messages = append(s.live.messages, m)
	if m.Role == session.RoleToolResult {
		s.live.toolTokens += tokens.Estimate(m.Raw)
		s.live.newTools = true
	}
}

// AfterTurn records an assistant message — appends it to the session and
// the live context — and runs what it calls for (docs/behaviour.md §9): overflow
// recovery when it is a context overflow, a threshold compaction when the
// context grew past contextWindow − reserveTokens.
//
// The Outcome is returned whenever the message was appended, also together
// with an error; the error of a failed automatic compaction is an
// *AutoCompactionError whose text starts as docs/behaviour.md §9.8 says. It matches
// ErrCancelled when a plugin cancelled the compaction and ErrAborted when
// AbortCompaction stopped it; on the overflow path either fails the turn.
func (s *Session) AfterTurn(ctx context.Context, msg json.RawMessage) (*Outcome, error) {
	if gjson.GetBytes(msg, "role").Str != session.RoleAssistant {
		return nil, ErrNotAssistant
	}
	d, err := session.MessageDraft(msg)
	if err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	st := s.Settings()
	prev := s.store.Leaf()
	entries, err := s.store.Append(d)
	if err != nil {
		s.resyncOnConflict(err)
		return nil, err
	}
	s.followOutside(prev, entries[0])
	return s.afterAppend(ctx, st, entries[0], msg)
}

// afterAppend is AfterTurn once the message is in the file: O(size of the
// message) unless a compaction is due.
func (s *Session) afterAppend(ctx context.Context, st Settings, e *session.Entry, msg []byte) (*Outcome, error) {
	m, _ := session.EntryMessage(e)
	out := &Outcome{Entry: e}

	s.mu.Lock()
	lastCompaction := s.live.compaction
	s.mu.Unlock()
	if t := messageTime(msg); !t.IsZero() && !lastCompaction.IsZero() && !t.After(lastCompaction) {
		out.Stale = true
	}
	if IsContextOverflow(msg, st.ContextWindow) && s.fromCurrentModel(e) {
		out.Overflow = true
		return s.recoverOverflow(ctx, st, out)
	}

	stop := e.StopReason()
	s.mu.Lock()
	s.pushLocked(m, !out.Stale)
	if stop != "error" && stop != "aborted" {
		s.overflowTried = false
	}
	noUsage := s.live.acct.usageAt < 0
	ctxTokens := s.live.acct.tokens()
	s.mu.Unlock()

	switch {
	case stop == "aborted", out.Stale:
		// The user stopped the turn, or it describes an older context.
		return out, nil
	case stop == "error" && noUsage:
		// Nothing reported the current context's size; estimates alone
		// are not trusted to start a compaction after an error.
		return out, nil
	}
	// Pruning comes first: what it saves may make the compaction
	// unnecessary (docs/behaviour.md §8).
	if out.Pruned = s.autoPrune(st); out.Pruned != nil {
		ctxTokens = out.Pruned.TokensAfter
	}
	if !st.Enabled || !st.above(ctxTokens) {
		return out, nil
	}
	return s.thresholdCompaction(ctx, st, out, ctxTokens)
}

// HandleAssistantError is AfterTurn for an assistant message that ended in
// an error; it exists for agent loops that route errors separately. A
// context overflow is recovered (or reported); any other error is only
// recorded and is the generic retry path's business.
func (s *Session) HandleAssistantError(ctx context.Context, msg json.RawMessage) (*Outcome, error) {
	return s.AfterTurn(ctx, msg)
}

// CheckThreshold runs a threshold compaction when the live context is
// above the threshold without a new message: before sending a prompt, or
// after the settings changed. The leaf entry counts as the trigger, so it
// never compacts twice for the same entry.
func (s *Session) CheckThreshold(ctx context.Context) (*Outcome, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	st := s.Settings()
	out := &Outcome{Entry: s.store.Leaf()}
	n := s.ContextTokens()
	if out.Entry == nil || !st.Enabled || !st.above(n) {
		return out, nil
	}
	return s.thresholdCompaction(ctx, st, out, n)
}

func (s *Session) thresholdCompaction(ctx context.Context, st Settings, out *Outcome, ctxTokens int) (*Outcome, error) {
	s.log.Debug("context above the compaction threshold", "tokens", ctxTokens, "threshold", st.threshold())
	res, skipped, err := s.auto(ctx, st, ReasonThreshold, out.Entry.ID)
	out.Skipped = skipped
	if err != nil {
		return out, err
	}
	out.Compaction = res
	if res != nil && st.AutoContinue {
		out.Action, out.Prompt = ActionContinue, ContinuePrompt
	}
	return out, nil
}

// recoverOverflow handles an overflow message (already appended, kept out
// of the live context): at most one compact-and-retry per episode, and
// only when automatic compaction is on.
func (s *Session) recoverOverflow(ctx context.Context, st Settings, out *Outcome) (*Outcome, error) {
	s.mu.Lock()
	tried, disabled := s.overflowTried, s.autoDisabled
	s.mu.Unlock()
	s.excluded[out.Entry.ID] = true
	attempt := func() {
		s.mu.Lock()
		s.overflowTried = true
		s.mu.Unlock()
	}

	report := func(err error) (*Outcome, error) {
		aerr := &AutoCompactionError{Reason: ReasonOverflow, Err: err}
		s.log.Warn("context overflow not recovered", "entry", out.Entry.ID, "error", aerr.Error())
		s.emit(Event{Kind: EventOverflowReported, Reason: ReasonOverflow, Error: aerr.Error()})
		return out, aerr
	}
	switch {
	case tried:
		return report(fmt.Errorf("%w; reduce the context or switch to a model with a larger window", ErrOverflowUnrecovered))
	case out.Stale:
		// The request was made before the latest compaction: the context
		// it overflowed is gone, so retrying is the recovery.
		attempt()
		out.Action = ActionRetry
		return out, nil
	case !st.Enabled:
		return report(fmt.Errorf("%w (compaction.enabled is false); compact manually or switch to a model with a larger window", ErrAutoCompactionDisabled))
	case disabled:
		return report(fmt.Errorf("%w after %d consecutive failures; a successful manual compaction turns it back on", ErrAutoCompactionDisabled, MaxAutoFailures))
	}
	attempt()
	res, _, err := s.auto(ctx, st, ReasonOverflow, out.Entry.ID)
	if err != nil {
		return out, err
	}
	out.Compaction = res
	out.Action = ActionRetry
	return out, nil
}

// auto runs an automatic compaction with the guards of docs/behaviour.md §9.6. skipped
// is set (and err nil) when a threshold compaction was due but a guard
// held it back.
func (s *Session) auto(ctx context.Context, st Settings, reason Reason, trigger string) (res *Result, skipped string, err error) {
	s.mu.Lock()
	disabled, last := s.autoDisabled, s.lastTrigger
	if trigger != last {
		s.lastTrigger = trigger
	}
	s.mu.Unlock()
	if trigger == last {
		if reason == ReasonThreshold {
			return nil, ErrAlreadyTriggered.Error(), nil
		}
		return nil, "", &AutoCompactionError{Reason: reason, Err: fmt.Errorf("entry %s: %w", trigger, ErrAlreadyTriggered)}
	}
	if disabled && reason == ReasonThreshold {
		return nil, fmt.Sprintf("%s after %d consecutive failures", ErrAutoCompactionDisabled, MaxAutoFailures), nil
	}

	res, err = s.compact(ctx, st, reason, "")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.autoFailures = 0
		return res, "", nil
	case errors.Is(err, ErrCompactingElsewhere), errors.Is(err, errNoLongerDue):
		// Another host compacts (or just compacted) this session; nothing
		// failed here.
		if reason == ReasonThreshold {
			return nil, err.Error(), nil
		}
	case errors.Is(err, ErrAborted), errors.Is(err, ErrCancelled):
		// A person or a plugin decided; nothing failed.
	default:
		s.autoFailures++
		if s.autoFailures >= MaxAutoFailures && !s.autoDisabled {
			s.autoDisabled = true
			msg := fmt.Sprintf("automatic compaction disabled after %d consecutive failures; a successful manual compaction turns it back on", s.autoFailures)
			s.log.Error(msg, "last_error", err)
			defer s.emit(Event{Kind: EventAutoCompactionDisabled, Reason: reason, Error: msg})
		}
	}
	return nil, "", &AutoCompactionError{Reason: reason, Err: err}
}

// Compact runs a manual compaction (docs/behaviour.md §9.1): it stops the running agent
// operation first, then compacts the current branch with the user's
// focus instructions. It runs whether or not automatic compaction is
// enabled, and a success turns automatic compaction back on after the
// failure guard disabled it. On a backend shared between hosts the agent
// is stopped only once this host holds the session's lease: when another
// host holds it, Compact fails with ErrCompactingElsewhere and the
// agent's turn goes on.
func (s *Session) Compact(ctx context.Context, instructions string) (*Result, error) {
	// The agent is stopped as soon as the compaction is known to run, and
	// no sooner: a turn killed for a compaction that is then refused is
	// lost for nothing.
	//
	// The order is operation lock, lease, abort. Taking the lease needs
	// the operation lock (holdLease: it changes the backend's tree and the
	// live context), and the abort comes after the lease, so a refused
	// compaction stops nothing. Waiting for the lock without stopping the
	// agent cannot deadlock: what holds the lock (an append, a turn end
	// with its pruning or automatic compaction, a navigation) ends by
	// itself and never waits for the agent. It may only take longer: an
	// agent's abort can cancel the turn end it is in.
	//
	// A session file has no lease: nothing can refuse the compaction
	// before it starts, so its agent is stopped before waiting for the
	// lock, which frees the lock sooner.
	_, shared := s.store.(session.Leaser)
	if !shared {
		s.abortAgent()
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	held, releaseLease, err := s.holdLease(ctx)
	if err != nil {
		return nil, err
	}
	defer releaseLease()
	if shared {
		s.abortAgent()
	}
	res, err := s.compactHeld(held, s.Settings(), ReasonManual, instructions, runMode{})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.autoFailures, s.autoDisabled = 0, false
	s.mu.Unlock()
	return res, nil
}

// abortAgent stops the agent's running operation for a manual compaction:
// one in this process through Options.AbortAgent, one in another process
// (pith serve) through EventAgentAbort.
func (s *Session) abortAgent() {
	if s.opts.AbortAgent != nil {
		s.opts.AbortAgent()
	}
	s.emit(Event{Kind: EventAgentAbort, Reason: ReasonManual})
}
