package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/store/files"
)

func TestThresholdCompaction(t *testing.T) {
	for _, tc := range []struct {
		name         string
		autoContinue bool
		wantAction   Action
		wantPrompt   string
	}{
		{"autoContinue", true, ActionContinue, "Continue if you have next steps."},
		{"no autoContinue", false, ActionNone, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, path := newSession(t, 12)
			st := testSettings()
			st.AutoContinue = tc.autoContinue
			sum := newScript()
			s := New(store, Options{Settings: st, Summarizer: sum})
			rec := record(s)

			newTurn(t, s)
			out, err := s.AfterTurn(context.Background(), assistantMsg("below", 3000, 100))
			if err != nil || out.Compaction != nil || out.Action != ActionNone {
				t.Fatalf("below the threshold: out=%+v err=%v", out, err)
			}
			newTurn(t, s)
			out, err = s.AfterTurn(context.Background(), assistantMsg("above", 8200, 100))
			if err != nil {
				t.Fatal(err)
			}
			if out.Compaction == nil || out.Compaction.Reason != ReasonThreshold {
				t.Fatalf("no threshold compaction: %+v", out)
			}
			if out.Action != tc.wantAction || out.Prompt != tc.wantPrompt {
				t.Errorf("action %v prompt %q, want %v %q", out.Action, out.Prompt, tc.wantAction, tc.wantPrompt)
			}
			cs := compactions(t, path)
			if len(cs) != 1 || cs[0].ID != out.Compaction.Entry.ID || cs[0].ParentID != out.Entry.ID {
				t.Fatalf("compaction entries %v, want one child of %s", cs, out.Entry.ID)
			}
			if got := cs[0].Get("tokensBefore").Int(); got != 8300 {
				t.Errorf("tokensBefore %d, want 8300", got)
			}
			msgs := s.Messages()
			if msgs[0].Role != session.RoleCompactionSummary {
				t.Errorf("live context starts with %s, want the summary", msgs[0].Role)
			}
			if out.Compaction.TokensAfter >= 8000 || s.ContextTokens() != out.Compaction.TokensAfter {
				t.Errorf("tokens after %d, live %d", out.Compaction.TokensAfter, s.ContextTokens())
			}
			end, _ := rec.last(EventCompactionEnd)
			if end.Reason != ReasonThreshold || end.WillRetry || end.Error != "" || end.Continue != tc.wantPrompt || end.TokensBefore != 8300 {
				t.Errorf("end event %+v", end)
			}
			if k := rec.kinds(); len(k) != 2 || k[0] != EventCompactionStart {
				t.Errorf("events %v", k)
			}
		})
	}
}

func TestEnabledFalse(t *testing.T) {
	ctx := context.Background()
	store, path := newSession(t, 12)
	st := testSettings()
	st.Enabled = false
	sum := newScript()
	s := New(store, Options{Settings: st, Summarizer: sum})
	rec := record(s)

	// Threshold: nothing happens.
	out, err := s.AfterTurn(ctx, assistantMsg("above", 9000, 100))
	if err != nil || out.Compaction != nil || out.Action != ActionNone {
		t.Fatalf("threshold with enabled false: %+v %v", out, err)
	}
	// Overflow: reported, not compacted.
	out, err = s.AfterTurn(ctx, errorMsg(overflowText))
	if !errors.Is(err, ErrAutoCompactionDisabled) || !strings.HasPrefix(err.Error(), "Context overflow recovery failed: ") {
		t.Fatalf("overflow with enabled false: %v", err)
	}
	if !out.Overflow || out.Action != ActionNone || out.Compaction != nil {
		t.Errorf("outcome %+v", out)
	}
	if _, ok := rec.last(EventOverflowReported); !ok {
		t.Error("no overflow_reported event")
	}
	// Reported the same way each time, not as a failed retry.
	if _, err := s.AfterTurn(ctx, errorMsg(overflowText)); !errors.Is(err, ErrAutoCompactionDisabled) {
		t.Fatalf("second overflow with enabled false: %v", err)
	}
	if len(compactions(t, path)) != 0 || sum.count() != 0 {
		t.Fatal("an automatic compaction ran while disabled")
	}
	// Manual compaction works: enabled governs automatic compaction only.
	res, err := s.Compact(ctx, "")
	if err != nil || res.Reason != ReasonManual {
		t.Fatalf("manual compaction with enabled false: %v", err)
	}
	if len(compactions(t, path)) != 1 {
		t.Fatal("manual compaction not saved")
	}
}

func TestManualCompaction(t *testing.T) {
	store, path := newSession(t, 12)
	aborted := 0
	sum := newScript()
	s := New(store, Options{Settings: testSettings(), Summarizer: sum, AbortAgent: func() { aborted++ }})
	rec := record(s)
	res, err := s.Compact(context.Background(), "focus on the parser")
	if err != nil {
		t.Fatal(err)
	}
	if aborted != 1 {
		t.Errorf("AbortAgent called %d times, want 1", aborted)
	}
	focused := false
	for _, r := range sum.reqs {
		focused = focused || strings.Contains(r.Prompt, "Additional focus: focus on the parser")
	}
	if !focused {
		t.Error("instructions missing from the summary request")
	}
	if res.MessagesSummarized == 0 || res.TokensBefore == 0 || res.TokensAfter >= res.TokensBefore || res.FirstKeptEntryID == "" {
		t.Errorf("result %+v", res)
	}
	if !strings.HasPrefix(res.Summary, "## Goal") {
		t.Errorf("summary %q", res.Summary)
	}
	// The live context is what the file now builds.
	f, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := session.NewTree(f.Entries).BuildContext(session.LeafDefault).Messages
	got := s.Messages()
	if len(got) != len(want) {
		t.Fatalf("live has %d messages, the file builds %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].Raw, want[i].Raw) {
			t.Fatalf("message %d differs", i)
		}
	}
	// The agent is told to stop its turn first (docs/behaviour.md §9.1).
	if k := rec.kinds(); len(k) != 3 || k[0] != EventAgentAbort || k[2] != EventCompactionEnd {
		t.Errorf("events %v", k)
	}
	// Nothing left to compact right after.
	if _, err := s.Compact(context.Background(), ""); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("second compaction: %v, want ErrNothingToCompact", err)
	}
}

func TestManualCompactionAbortedLeavesFileUnchanged(t *testing.T) {
	store, path := newSession(t, 12)
	before := readFile(t, path)
	sum := newScript(answer{block: true})
	s := New(store, Options{Settings: testSettings(), Summarizer: sum})
	rec := record(s)
	msgsBefore := s.Messages()

	done := make(chan error, 1)
	go func() {
		_, err := s.Compact(context.Background(), "")
		done <- err
	}()
	<-sum.started
	s.AbortCompaction()
	err := <-done
	if !errors.Is(err, ErrAborted) {
		t.Fatalf("aborted compaction returned %v, want ErrAborted", err)
	}
	if after := readFile(t, path); !bytes.Equal(before, after) {
		t.Fatal("the session file changed")
	}
	if got := s.Messages(); len(got) != len(msgsBefore) {
		t.Fatal("the live context changed")
	}
	end, _ := rec.last(EventCompactionEnd)
	if !end.Aborted || end.Error == "" {
		t.Errorf("end event %+v", end)
	}
	// The session still works afterwards.
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatalf("compaction after an abort: %v", err)
	}
}

func TestOverflowRecovery(t *testing.T) {
	ctx := context.Background()
	store, path := newSession(t, 12)
	sum := newScript()
	s := New(store, Options{Settings: testSettings(), Summarizer: sum})
	rec := record(s)

	out, err := s.HandleAssistantError(ctx, errorMsg(overflowText))
	if err != nil {
		t.Fatal(err)
	}
	if !out.Overflow || out.Action != ActionRetry || out.Compaction == nil || out.Compaction.Reason != ReasonOverflow {
		t.Fatalf("outcome %+v", out)
	}
	if liveHas(s, out.Entry.ID) {
		t.Error("the overflow error is in the live context")
	}
	if f, _ := session.Load(path); f.Entries[len(f.Entries)-2].ID != out.Entry.ID {
		t.Error("the overflow error is not in the session file before the compaction")
	}
	end, _ := rec.last(EventCompactionEnd)
	if !end.WillRetry || end.Reason != ReasonOverflow || end.Error != "" {
		t.Errorf("end event %+v", end)
	}

	// The retried request overflows again: same episode, reported.
	out, err = s.HandleAssistantError(ctx, errorMsg("This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens."))
	if !errors.Is(err, ErrOverflowUnrecovered) {
		t.Fatalf("second overflow: %v, want ErrOverflowUnrecovered", err)
	}
	if !strings.HasPrefix(err.Error(), "Context overflow recovery failed: ") || out.Action != ActionNone {
		t.Errorf("second overflow: %q action %v", err, out.Action)
	}
	if n := len(compactions(t, path)); n != 1 {
		t.Errorf("%d compactions, want 1", n)
	}
	if _, ok := rec.last(EventOverflowReported); !ok {
		t.Error("no overflow_reported event")
	}

	// A new user message starts a new episode.
	if _, err := s.AppendMessages(ctx, userMsg(prose(99, 2000))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterTurn(ctx, assistantMsg(prose(100, 2000), 3000, 500)); err != nil {
		t.Fatal(err)
	}
	out, err = s.HandleAssistantError(ctx, errorMsg(overflowText))
	if err != nil || out.Action != ActionRetry {
		t.Fatalf("overflow in a new episode: %+v %v", out, err)
	}
	if n := len(compactions(t, path)); n != 2 {
		t.Errorf("%d compactions, want 2", n)
	}
}

func TestSilentOverflow(t *testing.T) {
	store, _ := newSession(t, 12)
	s := New(store, Options{Settings: testSettings(), Summarizer: newScript()})
	// Answered, but input + cacheRead is beyond the 10 000-token window.
	msg := []byte(`{"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input":7000,"output":10,"cacheRead":4000,"cacheWrite":0,"totalTokens":11010},"stopReason":"stop"}`)
	out, err := s.AfterTurn(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Overflow || out.Action != ActionRetry || out.Compaction == nil {
		t.Fatalf("outcome %+v", out)
	}
	if liveHas(s, out.Entry.ID) {
		t.Error("the overflowing answer is in the rebuilt live context")
	}
}

func TestStaleOverflowRetriesWithoutCompacting(t *testing.T) {
	ctx := context.Background()
	store, path := newSession(t, 12)
	s := New(store, Options{Settings: testSettings(), Summarizer: newScript()})
	if _, err := s.Compact(ctx, ""); err != nil {
		t.Fatal(err)
	}
	// A request sent before that compaction comes back overflowed.
	stale := []byte(`{"role":"assistant","content":[],"usage":{"input":0,"output":0},"stopReason":"error","errorMessage":"prompt is too long","timestamp":1000}`)
	out, err := s.AfterTurn(ctx, stale)
	if err != nil || !out.Stale || out.Action != ActionRetry || out.Compaction != nil {
		t.Fatalf("stale overflow: %+v %v", out, err)
	}
	if n := len(compactions(t, path)); n != 1 {
		t.Errorf("%d compactions, want 1", n)
	}
}

func TestOverflowHookCancelFailsTheTurn(t *testing.T) {
	store, path := newSession(t, 12)
	h := &fakeHooks{cancel: true, cancelReason: "no compaction today"}
	sum := newScript()
	s := New(store, Options{Settings: testSettings(), Summarizer: sum, Hooks: h})
	out, err := s.HandleAssistantError(context.Background(), errorMsg(overflowText))
	if err == nil {
		t.Fatal("a cancelled overflow recovery succeeded")
	}
	want := `Context overflow recovery failed: compaction cancelled by plugin "guard": no compaction today`
	if err.Error() != want {
		t.Errorf("error %q\nwant  %q", err, want)
	}
	if !errors.Is(err, ErrCancelled) || out.Action != ActionNone || sum.count() != 0 {
		t.Errorf("outcome %+v, summarizer calls %d", out, sum.count())
	}
	if len(compactions(t, path)) != 0 {
		t.Error("a compaction was saved")
	}
	// A cancel is a decision, not a failure: the guard does not count it.
	if s.AutoCompactionDisabled() {
		t.Error("auto compaction disabled by a cancel")
	}
}

func TestFailureMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"threshold", assistantMsg("above", 9000, 100), "Auto-compaction failed: history summary: boom"},
		{"overflow", errorMsg(overflowText), "Context overflow recovery failed: history summary: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, path := newSession(t, 12)
			s := New(store, Options{Settings: testSettings(), Summarizer: newScript(answer{err: errBoom})})
			rec := record(s)
			newTurn(t, s)
			before := readFile(t, path)
			out, err := s.AfterTurn(context.Background(), tc.msg)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			var aerr *AutoCompactionError
			if !errors.As(err, &aerr) || !errors.Is(err, errBoom) || out == nil || out.Action != ActionNone {
				t.Errorf("error %#v outcome %+v", err, out)
			}
			end, _ := rec.last(EventCompactionEnd)
			if end.Error != tc.want || end.Aborted {
				t.Errorf("end event %+v", end)
			}
			// Only the turn's message was appended.
			after := readFile(t, path)
			if !bytes.HasPrefix(after, before) || bytes.Count(after[len(before):], []byte("\n")) != 1 {
				t.Error("more than the message was appended")
			}
		})
	}
}

func TestInvalidSummaryIsNotSaved(t *testing.T) {
	store, path := newSession(t, 12)
	s := New(store, Options{Settings: testSettings(), Summarizer: newScript(answer{text: "cut off", finish: "length"})})
	newTurn(t, s)
	_, err := s.AfterTurn(context.Background(), assistantMsg("above", 9000, 100))
	if err == nil || !strings.HasPrefix(err.Error(), "Auto-compaction failed: ") || !strings.Contains(err.Error(), "cut off by the output cap") {
		t.Fatalf("error %v", err)
	}
	if len(compactions(t, path)) != 0 {
		t.Error("an invalid summary was saved")
	}
}

func TestThrashGuard(t *testing.T) {
	store, path := newSession(t, 12)
	st := testSettings()
	// The kept tail alone (~2 500 tokens) is above a 2 000-token threshold.
	st.KeepRecentTokens, st.ContextWindow, st.ReserveTokens = 2500, 3000, 1000
	sum := newScript()
	s := New(store, Options{Settings: st, Summarizer: sum})
	out, err := s.AfterTurn(context.Background(), assistantMsg("above", 2500, 100))
	if !errors.Is(err, ErrStillAboveThreshold) || !strings.HasPrefix(err.Error(), "Auto-compaction failed: ") {
		t.Fatalf("error %v, want ErrStillAboveThreshold", err)
	}
	if out.Action != ActionNone || out.Compaction != nil {
		t.Errorf("outcome %+v: must not continue", out)
	}
	if len(compactions(t, path)) != 0 {
		t.Error("a compaction that cannot help was saved")
	}
	// Overflow with the same settings: a clear error, no retry.
	out, err = s.HandleAssistantError(context.Background(), errorMsg(overflowText))
	if !errors.Is(err, ErrStillAboveThreshold) || out.Action != ActionNone {
		t.Fatalf("overflow: %+v %v", out, err)
	}
}

func TestThreeAutomaticFailuresDisableUntilManualSuccess(t *testing.T) {
	ctx := context.Background()
	store, path := newSession(t, 12)
	sum := newScript(answer{err: errBoom}, answer{err: errBoom}, answer{err: errBoom})
	s := New(store, Options{Settings: testSettings(), Summarizer: sum})
	rec := record(s)
	for i := 0; i < MaxAutoFailures; i++ {
		newTurn(t, s)
		if _, err := s.AfterTurn(ctx, assistantMsg("above", 9000+i, 100)); !errors.Is(err, errBoom) {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	if !s.AutoCompactionDisabled() {
		t.Fatal("not disabled after three failures")
	}
	if _, ok := rec.last(EventAutoCompactionDisabled); !ok {
		t.Error("no auto_compaction_disabled event")
	}
	calls := sum.count()
	newTurn(t, s)
	out, err := s.AfterTurn(ctx, assistantMsg("above", 9100, 100))
	if err != nil || out.Compaction != nil || !strings.Contains(out.Skipped, "disabled") || sum.count() != calls {
		t.Fatalf("threshold while disabled: %+v %v", out, err)
	}
	_, err = s.HandleAssistantError(ctx, errorMsg(overflowText))
	if !errors.Is(err, ErrAutoCompactionDisabled) || !strings.HasPrefix(err.Error(), "Context overflow recovery failed: ") {
		t.Fatalf("overflow while disabled: %v", err)
	}
	if len(compactions(t, path)) != 0 {
		t.Fatal("compacted while disabled")
	}
	// A successful manual compaction turns automatic compaction back on.
	if _, err := s.Compact(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if s.AutoCompactionDisabled() {
		t.Fatal("still disabled after a manual success")
	}
	if _, err := s.AppendMessages(ctx, userMsg(prose(50, 2000))); err != nil {
		t.Fatal(err)
	}
	out, err = s.AfterTurn(ctx, assistantMsg(prose(51, 2000), 9000, 100))
	if err != nil || out.Compaction == nil {
		t.Fatalf("threshold after re-enabling: %+v %v", out, err)
	}
}

func TestEntryNeverTriggersTwice(t *testing.T) {
	ctx := context.Background()
	store, _ := newSession(t, 12)
	sum := newScript(answer{err: errBoom})
	s := New(store, Options{Settings: testSettings(), Summarizer: sum})
	newTurn(t, s)
	out, err := s.AfterTurn(ctx, assistantMsg("above", 9000, 100))
	if !errors.Is(err, errBoom) {
		t.Fatal(err)
	}
	again, err := s.CheckThreshold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Entry.ID != out.Entry.ID || again.Compaction != nil || again.Skipped != ErrAlreadyTriggered.Error() || sum.count() != 1 {
		t.Fatalf("second trigger on %s: %+v, summarizer calls %d", out.Entry.ID, again, sum.count())
	}
}

func TestCheckThresholdAfterSettingsChange(t *testing.T) {
	store, path := newSession(t, 12)
	st := testSettings()
	st.ContextWindow = 100000
	s := New(store, Options{Settings: st, Summarizer: newScript()})
	out, err := s.CheckThreshold(context.Background())
	if err != nil || out.Compaction != nil {
		t.Fatalf("%+v %v", out, err)
	}
	st.ContextWindow = 2500 // the live context (~3 000 tokens) is now above
	s.SetSettings(st)
	out, err = s.CheckThreshold(context.Background())
	if err != nil || out.Compaction == nil {
		t.Fatalf("%+v %v", out, err)
	}
	if len(compactions(t, path)) != 1 {
		t.Error("not saved")
	}
}

func TestSettingsSnapshotPerOperation(t *testing.T) {
	store, _ := newSession(t, 12)
	hold := make(chan struct{})
	sum := newScript(answer{text: "## Goal\nx", hold: hold})
	s := New(store, Options{Settings: testSettings(), Summarizer: sum})
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := s.AfterTurn(context.Background(), assistantMsg("above", 9000, 100))
		done <- result{out, err}
	}()
	<-sum.started
	changed := testSettings()
	changed.AutoContinue = false
	s.SetSettings(changed) // a hot reload in the middle of the operation
	close(hold)
	r := <-done
	if r.err != nil || r.out.Action != ActionContinue {
		t.Fatalf("the running operation did not keep its snapshot: %+v %v", r.out, r.err)
	}
	if s.Settings().AutoContinue {
		t.Error("the new snapshot was not stored")
	}
}

func TestIncrementalAccountingMatchesFullCount(t *testing.T) {
	ctx := context.Background()
	store, path := newSession(t, 6)
	s := New(store, Options{Summarizer: offline(), Settings: testSettings()})
	check := func(when string) {
		t.Helper()
		msgs := s.Messages()
		want := tokens.Context(len(msgs), func(i int) []byte { return msgs[i].Raw }).Tokens
		if got := s.ContextTokens(); got != want {
			t.Errorf("%s: running count %d, full count %d", when, got, want)
		}
	}
	check("after New")
	if _, err := s.AppendMessages(ctx, userMsg("hello there"), []byte(`{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"abcdefgh"}],"isError":false}`)); err != nil {
		t.Fatal(err)
	}
	check("after appends")
	if _, err := s.AfterTurn(ctx, assistantMsg("answer", 2000, 30)); err != nil {
		t.Fatal(err)
	}
	check("after a turn")
	if _, err := s.AfterTurn(ctx, errorMsg("overloaded_error: Overloaded")); err != nil {
		t.Fatal(err)
	}
	check("after a non-overflow error")
	// A fresh Session over the same file counts the same.
	store2, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store2.Close()
	if got, want := New(store2, Options{Summarizer: offline()}).ContextTokens(), s.ContextTokens(); got != want {
		t.Errorf("reopened: %d, want %d", got, want)
	}
}

func TestNotAssistant(t *testing.T) {
	store, _ := newSession(t, 1)
	s := New(store, Options{Summarizer: offline()})
	if _, err := s.AfterTurn(context.Background(), userMsg("x")); !errors.Is(err, ErrNotAssistant) {
		t.Errorf("got %v", err)
	}
	if _, err := s.AppendMessages(context.Background(), []byte(`[1]`)); err == nil {
		t.Error("a non-object message was accepted")
	}
}

func TestSubscribeAndSnapshots(t *testing.T) {
	ctx := context.Background()
	store, _ := newSession(t, 12)
	s := New(store, Options{Summarizer: offline(), Settings: testSettings()})
	var a, b int
	unsubA := s.Subscribe(func(Event) { a++ })
	s.Subscribe(func(Event) { b++ })
	snap := s.Messages()
	n := len(snap)
	if _, err := s.Compact(ctx, ""); err != nil {
		t.Fatal(err)
	}
	unsubA()
	newTurn(t, s)
	if _, err := s.Compact(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if a != 3 || b != 6 { // agent_abort, compaction_start, compaction_end
		t.Errorf("events seen: %d and %d, want 3 and 6", a, b)
	}
	if len(snap) != n || snap[0].Role != session.RoleUser {
		t.Error("a snapshot from Messages changed")
	}
}

// TestAppendEntriesKeepsTheLiveContext: a custom_message appended as an
// entry shows up in the live context as a custom message, and other entry
// types add nothing, without rebuilding the engine.
func TestAppendEntriesKeepsTheLiveContext(t *testing.T) {
	store, _ := newSession(t, 2)
	s := New(store, Options{Summarizer: offline(), Settings: DefaultSettings()})
	before := len(s.Messages())
	_, err := s.AppendEntries(context.Background(),
		session.Draft{Type: session.TypeCustomMessage, Fields: map[string]any{"customType": "note", "content": "remember", "display": true}},
		session.Draft{Type: session.TypeLabel, Fields: map[string]any{"targetId": store.Leaf().ID, "label": "x"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	msgs := s.Messages()
	if len(msgs) != before+1 || msgs[len(msgs)-1].Role != session.RoleCustom {
		t.Fatalf("live context: %d messages (was %d)", len(msgs), before)
	}
	if _, err := s.AppendEntries(context.Background(), session.Draft{Type: session.TypeCompaction}); err == nil {
		t.Fatal("a compaction entry was accepted")
	}
}

// TestCompactWithoutSummarizer: the engine has no summarizer of its own;
// one built without any fails the compaction plainly and leaves the file.
func TestCompactWithoutSummarizer(t *testing.T) {
	store, path := newSession(t, 6)
	before := readFile(t, path)
	s := New(store, Options{Settings: testSettings()})
	if _, err := s.Compact(context.Background(), ""); !errors.Is(err, ErrNoSummarizer) {
		t.Fatalf("Compact without a summarizer: %v, want ErrNoSummarizer", err)
	}
	if after := readFile(t, path); string(after) != string(before) {
		t.Errorf("the failed compaction changed the file")
	}
}
