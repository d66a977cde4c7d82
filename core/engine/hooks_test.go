package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
)

// fakeHooks is a Hooks that does not validate, to test the engine's own
// checks.
type fakeHooks struct {
	mu           sync.Mutex
	cancel       bool
	cancelReason string
	supply       *hooks.Compaction
	before       []*hooks.BeforeCompactEvent
	compactErr   error
}

func (f *fakeHooks) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent, lim hooks.CompactionLimits) (hooks.BeforeCompactOutcome, error) {
	f.mu.Lock()
	f.before = append(f.before, ev)
	f.mu.Unlock()
	if f.cancel {
		return hooks.BeforeCompactOutcome{Cancelled: true, CancelReason: f.cancelReason, Plugin: "guard"}, nil
	}
	return hooks.BeforeCompactOutcome{Compaction: f.supply, Plugin: "supplier"}, nil
}

func (f *fakeHooks) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (hooks.CompactingOutcome, error) {
	return hooks.CompactingOutcome{}, nil
}

func (f *fakeHooks) Compact(ctx context.Context, ev *hooks.CompactEvent) error { return f.compactErr }

func TestInvalidSuppliedCompactionRejected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		supply hooks.Compaction
		want   string
	}{
		{"empty summary", hooks.Compaction{Summary: "  ", FirstKeptEntryID: "x"}, "summary is empty"},
		{"over the cap", hooks.Compaction{Summary: strings.Repeat("word ", 2000)}, "over the cap"},
		{"first kept not on the path", hooks.Compaction{Summary: "ok", FirstKeptEntryID: "deadbeef"}, "not an entry of the compacted range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, path := newSession(t, 12)
			supply := tc.supply
			if supply.FirstKeptEntryID == "" {
				supply.FirstKeptEntryID = store.Tree().Entries[2].ID
			}
			h := &fakeHooks{supply: &supply}
			sum := newScript()
			s := New(store, Options{Settings: testSettings(), Summarizer: sum, Hooks: h})
			rec := record(s)
			res, err := s.Compact(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			ev, ok := rec.last(EventHookError)
			if !ok || ev.Plugin != "supplier" || !strings.Contains(ev.Error, tc.want) {
				t.Errorf("hook error event %+v, want one containing %q", ev, tc.want)
			}
			if res.FromHook || sum.count() == 0 {
				t.Error("the rejected compaction was used instead of the built-in path")
			}
			if c := compactions(t, path); len(c) != 1 || c[0].Get("fromHook").Bool() {
				t.Error("want one built-in compaction")
			}
		})
	}
}

func TestDispatcherHooks(t *testing.T) {
	ctx := context.Background()
	store, path := newSession(t, 12)
	var (
		mu        sync.Mutex
		savedSeen bool
		notified  *hooks.CompactEvent
		before    *hooks.BeforeCompactEvent
	)
	observer := hooks.NewPlugin(hooks.PluginInfo{Name: "observer", Priority: 1}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			mu.Lock()
			before = ev
			mu.Unlock()
			return nil, nil
		},
		OnCompacting: func(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
			return &hooks.CompactingResult{Context: []string{"the user prefers tabs"}, Prompt: "Summarize tersely.", PreserveData: json.RawMessage(`{"k":1}`)}, nil
		},
		OnCompact: func(ctx context.Context, ev *hooks.CompactEvent) error {
			// session_compact comes after the entry is on disk.
			f, err := session.Load(path)
			mu.Lock()
			defer mu.Unlock()
			notified = ev
			savedSeen = err == nil && bytes.Equal(f.Entries[len(f.Entries)-1].Raw, ev.CompactionEntry)
			return nil
		},
	})
	d, err := hooks.NewDispatcher(hooks.Options{}, observer)
	if err != nil {
		t.Fatal(err)
	}
	sum := newScript()
	s := New(store, Options{Settings: testSettings(), AutoSummarizer: sum, Hooks: d})
	newTurn(t, s)
	out, err := s.AfterTurn(ctx, assistantMsg("above", 9000, 100))
	if err != nil || out.Compaction == nil {
		t.Fatalf("%+v %v", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The path has 26 entries; those whose messages are summarized are not
	// sent a second time as path entries.
	if before == nil || before.Reason != ReasonThreshold || before.WillRetry || before.PathLength != 26 ||
		len(before.PathEntries)+len(before.Preparation.MessagesToSummarize) != 26 ||
		before.SessionID != store.File().Header.ID || len(before.Preparation.MessagesToSummarize) == 0 {
		t.Errorf("session_before_compact: reason %v, %d path entries, %d messages, path length %d",
			before.Reason, len(before.PathEntries), len(before.Preparation.MessagesToSummarize), before.PathLength)
	}
	req := sum.reqs[0]
	if !strings.Contains(req.Prompt, "- the user prefers tabs") || !strings.Contains(req.Prompt, "Summarize tersely.") {
		t.Errorf("context lines or prompt missing from the request:\n%s", req.Prompt)
	}
	c := compactions(t, path)[0]
	if got := c.Get("preserveData").Raw; got != `{"observer":{"k":1}}` {
		t.Errorf("preserveData %s", got)
	}
	if notified == nil || !savedSeen || notified.FromExtension {
		t.Errorf("session_compact %+v, saw the saved entry: %v", notified, savedSeen)
	}
}

func TestDispatcherSuppliedCompaction(t *testing.T) {
	store, path := newSession(t, 12)
	keep := store.Tree().Entries[20].ID
	supplier := hooks.NewPlugin(hooks.PluginInfo{Name: "enterprise"}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{
				Summary: "## Goal\nFrom the plugin.", FirstKeptEntryID: keep, TokensBefore: ev.Preparation.TokensBefore,
				Details: json.RawMessage(`{"source":"enterprise"}`),
			}}, nil
		},
	})
	d, err := hooks.NewDispatcher(hooks.Options{}, supplier)
	if err != nil {
		t.Fatal(err)
	}
	sum := newScript()
	s := New(store, Options{Settings: testSettings(), Summarizer: sum, Hooks: d})
	res, err := s.Compact(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.FromHook || res.Plugin != "enterprise" || res.FirstKeptEntryID != keep || sum.count() != 0 {
		t.Fatalf("result %+v, summarizer calls %d", res, sum.count())
	}
	c := compactions(t, path)[0]
	if !c.Get("fromHook").Bool() || c.Get("summary").String() != "## Goal\nFrom the plugin." || c.Get("details.source").String() != "enterprise" {
		t.Errorf("entry %s", c.Raw)
	}
	if m := s.Messages(); m[1].EntryID != keep {
		t.Errorf("live context does not resume at the kept entry")
	}
}

func TestClosedPluginFailureFailsCompaction(t *testing.T) {
	store, path := newSession(t, 12)
	failing := hooks.NewPlugin(hooks.PluginInfo{Name: "strict", Failure: hooks.FailureClosed}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			return nil, errors.New("database down")
		},
	})
	d, err := hooks.NewDispatcher(hooks.Options{}, failing)
	if err != nil {
		t.Fatal(err)
	}
	s := New(store, Options{Settings: testSettings(), Hooks: d})
	rec := record(s)
	_, err = s.AfterTurn(context.Background(), assistantMsg("above", 9000, 100))
	if !errors.Is(err, hooks.ErrPluginFailed) || !strings.HasPrefix(err.Error(), "Auto-compaction failed: ") {
		t.Fatalf("error %v", err)
	}
	if ev, ok := rec.last(EventHookError); !ok || ev.Plugin != "strict" {
		t.Errorf("hook error event %+v", ev)
	}
	if len(compactions(t, path)) != 0 {
		t.Error("compaction saved despite a closed failure")
	}
}

func TestSessionCompactErrorIsReportedNotFatal(t *testing.T) {
	store, path := newSession(t, 12)
	h := &fakeHooks{compactErr: &hooks.PluginError{Plugin: "audit", Event: hooks.EventCompact, Err: errors.New("disk full")}}
	s := New(store, Options{Settings: testSettings(), Hooks: h})
	rec := record(s)
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if ev, ok := rec.last(EventHookError); !ok || ev.Plugin != "audit" {
		t.Errorf("hook error event %+v", ev)
	}
	if len(compactions(t, path)) != 1 {
		t.Error("compaction not saved")
	}
}

func TestAbortDuringHook(t *testing.T) {
	store, path := newSession(t, 12)
	before := readFile(t, path)
	entered := make(chan struct{})
	slow := hooks.NewPlugin(hooks.PluginInfo{Name: "slow"}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	d, err := hooks.NewDispatcher(hooks.Options{}, slow)
	if err != nil {
		t.Fatal(err)
	}
	s := New(store, Options{Settings: testSettings(), Hooks: d})
	done := make(chan error, 1)
	go func() {
		_, err := s.HandleAssistantError(context.Background(), errorMsg(overflowText))
		done <- err
	}()
	<-entered
	s.AbortCompaction()
	err = <-done
	if !errors.Is(err, ErrAborted) || !strings.HasPrefix(err.Error(), "Context overflow recovery failed: compaction aborted") {
		t.Fatalf("error %v", err)
	}
	// Only the overflow message itself was appended.
	after := readFile(t, path)
	if !bytes.HasPrefix(after, before) || bytes.Count(after[len(before):], []byte("\n")) != 1 {
		t.Error("the aborted recovery changed the file beyond the message")
	}
}

func TestDispatcherRejectionReportedThroughObserveHook(t *testing.T) {
	store, path := newSession(t, 12)
	var s *Session
	bad := hooks.NewPlugin(hooks.PluginInfo{Name: "bad", Priority: 1}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{Summary: "x", FirstKeptEntryID: "deadbeef"}}, nil
		},
	})
	d, err := hooks.NewDispatcher(hooks.Options{Observe: func(o hooks.Observation) { s.ObserveHook(o) }}, bad)
	if err != nil {
		t.Fatal(err)
	}
	s = New(store, Options{Settings: testSettings(), Hooks: d})
	rec := record(s)
	res, err := s.Compact(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := rec.last(EventHookError)
	if !ok || ev.Plugin != "bad" || !strings.Contains(ev.Error, "rejected") {
		t.Errorf("hook error event %+v", ev)
	}
	if res.FromHook || compactions(t, path)[0].Get("fromHook").Bool() {
		t.Error("the rejected compaction was saved")
	}
}
