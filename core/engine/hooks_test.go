package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// fakeHooks is a Hooks that does not validate, to test the engine's own
// checks.
type fakeHooks struct {
	mu           sync.Mutex
	cancel       bool
	cancelReason string
	supply       *hooks.Compaction
	before       []*hooks.BeforeCompactEvent
	compacting   []*hooks.CompactingEvent
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
	f.mu.Lock()
	f.compacting = append(f.compacting, ev)
	f.mu.Unlock()
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
	observer := dispatch.NewPlugin(hooks.PluginInfo{Name: "observer", Priority: 1}, hooks.Funcs{
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
	d, err := dispatch.NewDispatcher(dispatch.Options{}, observer)
	if err != nil {
		t.Fatal(err)
	}
	sum := newScript()
	s := New(store, Options{Settings: testSettings(), Summarizer: sum, Hooks: d})
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
	supplier := dispatch.NewPlugin(hooks.PluginInfo{Name: "enterprise"}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{
				Summary: "## Goal\nFrom the plugin.", FirstKeptEntryID: keep, TokensBefore: ev.Preparation.TokensBefore,
				Details: json.RawMessage(`{"source":"enterprise"}`),
			}}, nil
		},
	})
	d, err := dispatch.NewDispatcher(dispatch.Options{}, supplier)
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
	failing := dispatch.NewPlugin(hooks.PluginInfo{Name: "strict", Failure: hooks.FailureClosed}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			return nil, errors.New("database down")
		},
	})
	d, err := dispatch.NewDispatcher(dispatch.Options{}, failing)
	if err != nil {
		t.Fatal(err)
	}
	s := New(store, Options{Summarizer: offline(), Settings: testSettings(), Hooks: d})
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
	s := New(store, Options{Summarizer: offline(), Settings: testSettings(), Hooks: h})
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
	slow := dispatch.NewPlugin(hooks.PluginInfo{Name: "slow"}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	d, err := dispatch.NewDispatcher(dispatch.Options{}, slow)
	if err != nil {
		t.Fatal(err)
	}
	s := New(store, Options{Summarizer: offline(), Settings: testSettings(), Hooks: d})
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
	bad := dispatch.NewPlugin(hooks.PluginInfo{Name: "bad", Priority: 1}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{Summary: "x", FirstKeptEntryID: "deadbeef"}}, nil
		},
	})
	d, err := dispatch.NewDispatcher(dispatch.Options{Observe: func(o hooks.Observation) { s.ObserveHook(o) }}, bad)
	if err != nil {
		t.Fatal(err)
	}
	s = New(store, Options{Summarizer: offline(), Settings: testSettings(), Hooks: d})
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

// TestBeforeCompactSendsLabelsInForce: a guard decides by the labels in
// force at the leaf, so a label replaced or cleared by a later label entry
// is not sent; RangeStart says where the summarized range starts.
func TestBeforeCompactSendsLabelsInForce(t *testing.T) {
	store, _ := newSession(t, 12)
	ids := []string{store.Tree().Entries[0].ID, store.Tree().Entries[1].ID, store.Tree().Entries[2].ID}
	for _, l := range [][2]string{{ids[0], "no-compact"}, {ids[1], "no-compact"}, {ids[2], "keep"}, {ids[0], ""}, {ids[2], "no-compact"}} {
		if _, err := store.Append(session.Draft{Type: session.TypeLabel, Fields: map[string]any{"targetId": l[0], "label": l[1]}}); err != nil {
			t.Fatal(err)
		}
	}
	h := &fakeHooks{cancel: true}
	s := New(store, Options{Settings: testSettings(), Summarizer: newScript(), Hooks: h})
	if _, err := s.Compact(context.Background(), ""); !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v", err)
	}
	ev := h.before[0]
	want := []hooks.Label{{EntryID: ids[1], Label: "no-compact"}, {EntryID: ids[2], Label: "no-compact"}}
	if !slices.Equal(ev.Labels, want) {
		t.Errorf("labels %+v, want %+v", ev.Labels, want)
	}
	if ev.Preparation.RangeStart != 0 {
		t.Errorf("range start %d on a never-compacted session", ev.Preparation.RangeStart)
	}
}

// TestReadEntriesPages: pages of a whole-file read (the header counts as
// one entry) and of a path read join up to the unpaged answer.
func TestReadEntriesPages(t *testing.T) {
	store, _ := newSession(t, 5)
	h := &HostAPI{Lookup: SingleSession(store)}
	ctx := context.Background()
	for _, pathOnly := range []bool{false, true} {
		all, err := h.ReadEntries(ctx, hooks.ReadEntriesRequest{PathOnly: pathOnly})
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 2, 3, 7, 100} {
			var got []json.RawMessage
			for {
				page, err := h.ReadEntries(ctx, hooks.ReadEntriesRequest{PathOnly: pathOnly, Offset: len(got), Limit: size})
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				if len(page) > size {
					t.Fatalf("page of %d, limit %d", len(page), size)
				}
				got = append(got, page...)
			}
			if len(got) != len(all) {
				t.Fatalf("path %v, pages of %d: %d entries, want %d", pathOnly, size, len(got), len(all))
			}
			for i := range got {
				if !bytes.Equal(got[i], all[i]) {
					t.Fatalf("path %v, pages of %d: entry %d differs", pathOnly, size, i)
				}
			}
		}
	}
}
