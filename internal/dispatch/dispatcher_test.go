package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// recorder collects the names of the plugins called, in call order.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// bc builds a plugin answering session_before_compact with fn.
func bc(rec *recorder, info hooks.PluginInfo, fn func(ctx context.Context) (*hooks.BeforeCompactResult, error)) hooks.Plugin {
	return dispatch.NewPlugin(info, hooks.Funcs{OnBeforeCompact: func(ctx context.Context, _ *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
		rec.add(info.Name)
		return fn(ctx)
	}})
}

func answer(r *hooks.BeforeCompactResult) func(context.Context) (*hooks.BeforeCompactResult, error) {
	return func(context.Context) (*hooks.BeforeCompactResult, error) { return r, nil }
}

func fail(err error) func(context.Context) (*hooks.BeforeCompactResult, error) {
	return func(context.Context) (*hooks.BeforeCompactResult, error) { return nil, err }
}

func hang(ctx context.Context) (*hooks.BeforeCompactResult, error) {
	// Ignores ctx on purpose: the Dispatcher must not wait for it.
	select {}
}

func boom(context.Context) (*hooks.BeforeCompactResult, error) { panic("boom") }

func compaction(summary, firstKept string) *hooks.BeforeCompactResult {
	return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{Summary: summary, FirstKeptEntryID: firstKept, TokensBefore: 1000}}
}

func info(name string, prio, order int) hooks.PluginInfo {
	return hooks.PluginInfo{Name: name, Priority: prio, Order: order, Timeout: time.Second}
}

func closed(i hooks.PluginInfo) hooks.PluginInfo {
	i.Failure = hooks.FailureClosed
	return i
}

func short(i hooks.PluginInfo) hooks.PluginInfo {
	i.Timeout = 20 * time.Millisecond
	return i
}

func newDispatcher(t *testing.T, obs func(hooks.Observation), ps ...hooks.Plugin) *dispatch.Dispatcher {
	t.Helper()
	d, err := dispatch.NewDispatcher(dispatch.Options{Logger: hclog.NewNullLogger(), Observe: obs}, ps...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBeforeCompact(t *testing.T) {
	limits := hooks.CompactionLimits{MaxSummaryTokens: 10, AllowedFirstKeptIDs: []string{"e5", "e6"}}
	tests := []struct {
		name        string
		plugins     func(r *recorder) []hooks.Plugin
		wantCalls   []string
		want        hooks.BeforeCompactOutcome
		wantErr     error
		wantErrText string
	}{
		{
			name:    "no plugins",
			plugins: func(r *recorder) []hooks.Plugin { return nil },
		},
		{
			name: "priority then configuration order, nobody answers",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{
					bc(r, info("c", 10, 0), answer(nil)),
					bc(r, info("b", 5, 2), answer(nil)),
					bc(r, info("a", 5, 1), answer(&hooks.BeforeCompactResult{})),
				}
			},
			wantCalls: []string{"a", "b", "c"},
		},
		{
			name: "first cancel ends the chain",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{
					bc(r, info("first", 1, 0), answer(nil)),
					bc(r, info("guard", 2, 1), answer(&hooks.BeforeCompactResult{Cancel: true, CancelReason: "no-compact label"})),
					bc(r, info("late", 3, 2), answer(compaction("s", "e5"))),
				}
			},
			wantCalls: []string{"first", "guard"},
			want:      hooks.BeforeCompactOutcome{Cancelled: true, CancelReason: "no-compact label", Plugin: "guard"},
		},
		{
			name: "first compaction ends the chain, no silent overwrite",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{
					bc(r, info("one", 1, 0), answer(compaction("first summary", "e5"))),
					bc(r, info("two", 2, 1), answer(compaction("second", "e6"))),
				}
			},
			wantCalls: []string{"one"},
			want:      hooks.BeforeCompactOutcome{Compaction: compaction("first summary", "e5").Compaction, Plugin: "one"},
		},
		{
			name: "cancel wins over a compaction in the same result",
			plugins: func(r *recorder) []hooks.Plugin {
				res := compaction("s", "e5")
				res.Cancel = true
				return []hooks.Plugin{bc(r, info("both", 1, 0), answer(res))}
			},
			wantCalls: []string{"both"},
			want:      hooks.BeforeCompactOutcome{Cancelled: true, Plugin: "both"},
		},
		{
			name: "invalid compactions are rejected and the chain goes on",
			plugins: func(r *recorder) []hooks.Plugin {
				badJSON := compaction("ok", "e5")
				badJSON.Compaction.Details = json.RawMessage(`{oops`)
				return []hooks.Plugin{
					bc(r, info("empty", 1, 0), answer(compaction("  ", "e5"))),
					bc(r, info("huge", 2, 0), answer(compaction("this summary is far longer than ten tokens allow, surely", "e5"))),
					bc(r, info("offpath", 3, 0), answer(compaction("ok", "e1"))),
					bc(r, info("nokept", 4, 0), answer(compaction("ok", ""))),
					bc(r, info("badjson", 5, 0), answer(badJSON)),
					bc(r, info("good", 6, 0), answer(compaction("fine", "e6"))),
				}
			},
			wantCalls: []string{"empty", "huge", "offpath", "nokept", "badjson", "good"},
			want:      hooks.BeforeCompactOutcome{Compaction: compaction("fine", "e6").Compaction, Plugin: "good"},
		},
		{
			name: "errors, timeouts and panics fail open",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{
					bc(r, info("err", 1, 0), fail(errors.New("nope"))),
					bc(r, short(info("slow", 2, 0)), hang),
					bc(r, info("panicky", 3, 0), boom),
					bc(r, info("good", 4, 0), answer(compaction("fine", "e5"))),
				}
			},
			wantCalls: []string{"err", "slow", "panicky", "good"},
			want:      hooks.BeforeCompactOutcome{Compaction: compaction("fine", "e5").Compaction, Plugin: "good"},
		},
		{
			name: "an error fails closed",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{
					bc(r, closed(info("strict", 1, 0)), fail(errors.New("backend down"))),
					bc(r, info("never", 2, 0), answer(compaction("x", "e5"))),
				}
			},
			wantCalls:   []string{"strict"},
			wantErr:     hooks.ErrPluginFailed,
			wantErrText: `hook session_before_compact: plugin "strict" failed: backend down`,
		},
		{
			name: "a timeout fails closed",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{bc(r, short(closed(info("sleepy", 1, 0))), hang)}
			},
			wantCalls: []string{"sleepy"},
			wantErr:   hooks.ErrTimeout,
		},
		{
			name: "a panic fails closed",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{bc(r, closed(info("panicky", 1, 0)), boom)}
			},
			wantCalls: []string{"panicky"},
			wantErr:   hooks.ErrPanic,
		},
		{
			name: "a rejected compaction does not trip failure closed",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{bc(r, closed(info("strict", 1, 0)), answer(compaction("", "e5")))}
			},
			wantCalls: []string{"strict"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			d := newDispatcher(t, nil, tt.plugins(r)...)
			got, err := d.BeforeCompact(context.Background(), &hooks.BeforeCompactEvent{SessionID: "s1", Reason: hooks.ReasonManual}, limits)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, hooks.ErrPluginFailed) {
					t.Fatalf("err = %v, want %v and ErrPluginFailed", err, tt.wantErr)
				}
				if tt.wantErrText != "" && err.Error() != tt.wantErrText {
					t.Fatalf("err = %q, want %q", err, tt.wantErrText)
				}
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("outcome = %+v, want %+v", got, tt.want)
			}
			if calls := r.got(); !reflect.DeepEqual(calls, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", calls, tt.wantCalls)
			}
		})
	}
}

func TestBeforeCompactOperationCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	p := dispatch.NewPlugin(info("waits", 1, 0), hooks.Funcs{OnBeforeCompact: func(ctx context.Context, _ *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	var obs []hooks.Observation
	d := newDispatcher(t, func(o hooks.Observation) { obs = append(obs, o) }, p)
	go func() {
		<-started
		cancel()
	}()
	_, err := d.BeforeCompact(ctx, &hooks.BeforeCompactEvent{}, hooks.CompactionLimits{})
	if !errors.Is(err, context.Canceled) || errors.Is(err, hooks.ErrPluginFailed) {
		t.Fatalf("err = %v, want context.Canceled and not a plugin failure", err)
	}
	if len(obs) != 1 || obs[0].Outcome != hooks.OutcomeAborted {
		t.Fatalf("observations = %+v, want one aborted", obs)
	}
}

func TestCompacting(t *testing.T) {
	mk := func(name string, prio int, res *hooks.CompactingResult, err error) hooks.Plugin {
		return dispatch.NewPlugin(info(name, prio, 0), hooks.Funcs{OnCompacting: func(context.Context, *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
			return res, err
		}})
	}
	tests := []struct {
		name    string
		plugins []hooks.Plugin
		want    hooks.CompactingOutcome
		wantErr bool
	}{
		{name: "no plugins"},
		{
			name: "context concatenated in priority order, first prompt wins, preserveData by name",
			plugins: []hooks.Plugin{
				mk("late", 9, &hooks.CompactingResult{Context: []string{"c3"}, Prompt: "late prompt", PreserveData: json.RawMessage(`[1, 2]`)}, nil),
				mk("early", 1, &hooks.CompactingResult{Context: []string{"c1", "c2"}, PreserveData: json.RawMessage(`{"k": "v"}`)}, nil),
				mk("mid", 5, &hooks.CompactingResult{Prompt: "mid prompt"}, nil),
				mk("silent", 6, nil, nil),
				mk("broken", 7, nil, errors.New("oops")),
				mk("badjson", 8, &hooks.CompactingResult{Context: []string{"c-bad"}, PreserveData: json.RawMessage(`{`)}, nil),
			},
			want: hooks.CompactingOutcome{
				Context:      []string{"c1", "c2", "c-bad", "c3"},
				Prompt:       "mid prompt",
				PromptFrom:   "mid",
				PreserveData: json.RawMessage(`{"early":{"k":"v"},"late":[1,2]}`),
			},
		},
		{
			name: "failure closed cancels",
			plugins: []hooks.Plugin{
				mk("ok", 1, &hooks.CompactingResult{Context: []string{"c1"}}, nil),
				dispatch.NewPlugin(closed(info("strict", 2, 0)), hooks.Funcs{OnCompacting: func(context.Context, *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
					return nil, errors.New("down")
				}}),
			},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDispatcher(t, nil, tt.plugins...)
			got, err := d.Compacting(context.Background(), &hooks.CompactingEvent{SessionID: "s"})
			if tt.wantErr {
				if !errors.Is(err, hooks.ErrPluginFailed) {
					t.Fatalf("err = %v, want ErrPluginFailed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v (preserve %s), want %+v (preserve %s)", got, got.PreserveData, tt.want, tt.want.PreserveData)
			}
		})
	}
}

// TestNotificationsRunConcurrently proves concurrency without timing: every
// handler waits until all of them have started.
func TestNotificationsRunConcurrently(t *testing.T) {
	const n = 3
	tests := []struct {
		name string
		mk   func(barrier func(ctx context.Context) error) hooks.Funcs
		run  func(d *dispatch.Dispatcher) error
	}{
		{
			name: "session_compact",
			mk: func(b func(context.Context) error) hooks.Funcs {
				return hooks.Funcs{OnCompact: func(ctx context.Context, _ *hooks.CompactEvent) error { return b(ctx) }}
			},
			run: func(d *dispatch.Dispatcher) error {
				return d.Compact(context.Background(), &hooks.CompactEvent{CompactionEntry: json.RawMessage(`{}`)})
			},
		},
		{
			name: "session_tree",
			mk: func(b func(context.Context) error) hooks.Funcs {
				return hooks.Funcs{OnTree: func(ctx context.Context, _ *hooks.TreeEvent) error { return b(ctx) }}
			},
			run: func(d *dispatch.Dispatcher) error {
				return d.Tree(context.Background(), &hooks.TreeEvent{NewLeafID: "a"})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wg sync.WaitGroup
			wg.Add(n)
			all := make(chan struct{})
			go func() { wg.Wait(); close(all) }()
			barrier := func(ctx context.Context) error {
				wg.Done()
				select {
				case <-all:
					return nil
				case <-ctx.Done():
					return fmt.Errorf("not concurrent: %w", ctx.Err())
				}
			}
			var ps []hooks.Plugin
			for i := range n {
				ps = append(ps, dispatch.NewPlugin(closed(info(fmt.Sprint("p", i), i, i)), tt.mk(barrier)))
			}
			if err := tt.run(newDispatcher(t, nil, ps...)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNotificationFailures(t *testing.T) {
	hangs := hooks.Funcs{OnCompact: func(context.Context, *hooks.CompactEvent) error { select {} }}
	called := make(chan struct{}, 1)
	fine := hooks.Funcs{OnCompact: func(context.Context, *hooks.CompactEvent) error { called <- struct{}{}; return nil }}
	failing := hooks.Funcs{OnCompact: func(context.Context, *hooks.CompactEvent) error { return errors.New("disk full") }}

	d := newDispatcher(t, nil,
		dispatch.NewPlugin(short(info("hangs", 1, 0)), hangs),
		dispatch.NewPlugin(info("fine", 2, 0), fine),
		dispatch.NewPlugin(info("open", 3, 0), failing),
	)
	if err := d.Compact(context.Background(), &hooks.CompactEvent{}); err != nil {
		t.Fatalf("open failures must not surface: %v", err)
	}
	<-called

	d = newDispatcher(t, nil, dispatch.NewPlugin(closed(info("audit", 1, 0)), failing))
	err := d.Compact(context.Background(), &hooks.CompactEvent{})
	var pe *hooks.PluginError
	if !errors.As(err, &pe) || pe.Plugin != "audit" || pe.Event != hooks.EventCompact {
		t.Fatalf("err = %v, want a PluginError for audit", err)
	}
}

func TestBeforeTree(t *testing.T) {
	mk := func(rec *recorder, name string, prio int, res *hooks.BeforeTreeResult) hooks.Plugin {
		return dispatch.NewPlugin(info(name, prio, 0), hooks.Funcs{OnBeforeTree: func(context.Context, *hooks.BeforeTreeEvent) (*hooks.BeforeTreeResult, error) {
			rec.add(name)
			return res, nil
		}})
	}
	lim := hooks.SummaryLimits{MaxSummaryTokens: 5}
	tests := []struct {
		name      string
		plugins   func(r *recorder) []hooks.Plugin
		want      hooks.BeforeTreeOutcome
		wantCalls []string
	}{
		{
			name: "first cancel ends the chain",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{
					mk(r, "a", 1, &hooks.BeforeTreeResult{Label: "first label"}),
					mk(r, "b", 2, &hooks.BeforeTreeResult{Cancel: true, CancelReason: "locked", Label: "second"}),
					mk(r, "c", 3, &hooks.BeforeTreeResult{Summary: &hooks.BranchSummary{Summary: "x"}}),
				}
			},
			want:      hooks.BeforeTreeOutcome{Cancelled: true, CancelReason: "locked", Plugin: "b", Label: "first label"},
			wantCalls: []string{"a", "b"},
		},
		{
			name: "first valid summary ends the chain; instructions first wins",
			plugins: func(r *recorder) []hooks.Plugin {
				return []hooks.Plugin{
					mk(r, "a", 1, &hooks.BeforeTreeResult{CustomInstructions: "focus on files", ReplaceInstructions: true}),
					mk(r, "b", 2, &hooks.BeforeTreeResult{CustomInstructions: "ignored"}),
					mk(r, "empty", 3, &hooks.BeforeTreeResult{Summary: &hooks.BranchSummary{Summary: ""}, Label: "from-rejected"}),
					mk(r, "long", 4, &hooks.BeforeTreeResult{Summary: &hooks.BranchSummary{Summary: "much too long for five tokens"}}),
					mk(r, "c", 5, &hooks.BeforeTreeResult{Summary: &hooks.BranchSummary{Summary: "short", Details: json.RawMessage(`{"a":1}`)}}),
					mk(r, "d", 6, &hooks.BeforeTreeResult{Summary: &hooks.BranchSummary{Summary: "later"}}),
				}
			},
			want: hooks.BeforeTreeOutcome{
				Summary:             &hooks.BranchSummary{Summary: "short", Details: json.RawMessage(`{"a":1}`)},
				Plugin:              "c",
				CustomInstructions:  "focus on files",
				ReplaceInstructions: true,
			},
			wantCalls: []string{"a", "b", "empty", "long", "c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{}
			d := newDispatcher(t, nil, tt.plugins(r)...)
			got, err := d.BeforeTree(context.Background(), &hooks.BeforeTreeEvent{TargetID: "t", UserWantsSummary: true}, lim)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if calls := r.got(); !reflect.DeepEqual(calls, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", calls, tt.wantCalls)
			}
		})
	}
}

func TestSetPlugins(t *testing.T) {
	d := newDispatcher(t, nil)
	dup := []hooks.Plugin{
		dispatch.NewPlugin(info("x", 1, 0), hooks.Funcs{}),
		dispatch.NewPlugin(info("x", 2, 1), hooks.Funcs{}),
	}
	if err := d.SetPlugins(dup); err == nil {
		t.Fatal("duplicate names accepted")
	}
	if d.Has(hooks.EventCompact) {
		t.Fatal("Has with no plugins")
	}

	// A dispatch in flight keeps the set it started with while the set is
	// swapped under it.
	r := &recorder{}
	release := make(chan struct{})
	first := dispatch.NewPlugin(info("first", 1, 0), hooks.Funcs{OnBeforeCompact: func(context.Context, *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
		r.add("first")
		<-release
		return nil, nil
	}})
	second := bc(r, info("second", 2, 0), answer(nil))
	if err := d.SetPlugins([]hooks.Plugin{first, second}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := d.BeforeCompact(context.Background(), &hooks.BeforeCompactEvent{}, hooks.CompactionLimits{})
		done <- err
	}()
	for len(r.got()) == 0 {
		time.Sleep(time.Millisecond)
	}
	replacement := bc(r, info("replacement", 0, 0), answer(nil))
	if err := d.SetPlugins([]hooks.Plugin{replacement}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := r.got(), []string{"first", "second"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if names := d.Plugins(); len(names) != 1 || names[0].Info().Name != "replacement" {
		t.Fatalf("plugins after swap = %v", names)
	}
}

type fakeHost struct{ hooks.HostAPI }

func TestHostInContextAndObservations(t *testing.T) {
	host := fakeHost{}
	var mu sync.Mutex
	var obs []hooks.Observation
	p := dispatch.NewPlugin(info("h", 1, 0), hooks.Funcs{OnCompacting: func(ctx context.Context, _ *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
		h, ok := hooks.HostFromContext(ctx)
		if _, scoped := h.(*dispatch.ScopedHost); !ok || !scoped {
			return nil, errors.New("no scoped host in context")
		}
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("no deadline")
		}
		return &hooks.CompactingResult{Prompt: "p"}, nil
	}})
	d, err := dispatch.NewDispatcher(dispatch.Options{Host: host, Observe: func(o hooks.Observation) {
		mu.Lock()
		obs = append(obs, o)
		mu.Unlock()
	}}, p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Compacting(context.Background(), &hooks.CompactingEvent{})
	if err != nil || out.Prompt != "p" {
		t.Fatalf("out = %+v, err = %v", out, err)
	}
	if len(obs) != 1 || obs[0].Outcome != hooks.OutcomeOK || obs[0].Plugin != "h" || obs[0].Event != hooks.EventCompacting {
		t.Fatalf("observations = %+v", obs)
	}
}

func TestDetectEvents(t *testing.T) {
	tests := []struct {
		name string
		h    any
		want []hooks.EventID
	}{
		{"nothing", struct{}{}, nil},
		{"func adapter", hooks.TreeFunc(func(context.Context, *hooks.TreeEvent) error { return nil }), []hooks.EventID{hooks.EventTree}},
		{"funcs lists set fields", hooks.Funcs{OnCompact: func(context.Context, *hooks.CompactEvent) error { return nil }}, []hooks.EventID{hooks.EventCompact}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hooks.DetectEvents(tt.h); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseFailure(t *testing.T) {
	for in, want := range map[string]hooks.Failure{"": hooks.FailureOpen, "open": hooks.FailureOpen, "closed": hooks.FailureClosed} {
		if got, err := dispatch.ParseFailure(in); err != nil || got != want {
			t.Errorf("ParseFailure(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := dispatch.ParseFailure("sometimes"); err == nil {
		t.Error("accepted a bad policy")
	}
}
