package pluginhost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/sdk/sdktest"
)

func spec(name string, prio int, args ...string) pluginhost.Spec {
	return pluginhost.Spec{Name: name, Path: scripted, Args: append([]string{"-name", name}, args...), Priority: prio, Timeout: 10 * time.Second}
}

// startAll starts specs through a Host and returns a Dispatcher over them.
func startAll(t *testing.T, opts pluginhost.Options, obs func(hooks.Observation), specs ...pluginhost.Spec) (*pluginhost.Host, *dispatch.Dispatcher) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	h := pluginhost.NewHost(opts)
	t.Cleanup(func() { h.StopAll(context.Background()) })
	ps, retire, err := h.Apply(context.Background(), specs)
	if err != nil {
		t.Fatal(err)
	}
	retire(context.Background())
	d, err := dispatch.NewDispatcher(dispatch.Options{Logger: opts.Logger, Observe: obs}, ps...)
	if err != nil {
		t.Fatal(err)
	}
	return h, d
}

func preparedEvent() *hooks.BeforeCompactEvent {
	return &hooks.BeforeCompactEvent{
		SessionID: "s1",
		Preparation: hooks.Preparation{
			FirstKeptEntryID:    "e3",
			TokensBefore:        5000,
			MessagesToSummarize: []json.RawMessage{json.RawMessage(`{"role":"user","content":"hi","future":{"x":1}}`)},
		},
		PathEntries: []json.RawMessage{json.RawMessage(`{"type":"message","id":"e1"}`)},
		Reason:      hooks.ReasonThreshold,
	}
}

var limits = hooks.CompactionLimits{MaxSummaryTokens: 1000, AllowedFirstKeptIDs: []string{"e2", "e3"}}

type observations struct {
	mu  sync.Mutex
	all []hooks.Observation
}

func (o *observations) add(x hooks.Observation) {
	o.mu.Lock()
	o.all = append(o.all, x)
	o.mu.Unlock()
}

func (o *observations) plugins(event hooks.EventID) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var names []string
	for _, x := range o.all {
		if x.Event == event {
			names = append(names, x.Plugin)
		}
	}
	return names
}

func (o *observations) outcomes() []hooks.Outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []hooks.Outcome
	for _, x := range o.all {
		out = append(out, x.Outcome)
	}
	return out
}

func TestEveryEventAcrossPlugins(t *testing.T) {
	record := filepath.Join(t.TempDir(), "notes")
	obs := &observations{}
	// A short health interval exercises Ping alongside the real calls.
	_, d := startAll(t, pluginhost.Options{HealthInterval: 20 * time.Millisecond}, obs.add,
		spec("alpha", 1, "-before-compact", "none", "-compacting", "context", "-prompt", "alpha prompt", "-compact", "record", "-record", record, "-before-tree", "none", "-tree", "record"),
		spec("beta", 2, "-before-compact", "compact", "-compacting", "context", "-prompt", "beta prompt", "-compact", "record", "-record", record, "-before-tree", "summary", "-tree", "record"),
		spec("gamma", 3, "-before-compact", "cancel", "-compacting", "context", "-compact", "record", "-record", record, "-before-tree", "cancel", "-tree", "record"),
	)
	ctx := context.Background()

	bc, err := d.BeforeCompact(ctx, preparedEvent(), limits)
	if err != nil {
		t.Fatal(err)
	}
	if bc.Plugin != "beta" || bc.Compaction == nil || bc.Compaction.Summary != "beta summary" || string(bc.Compaction.Details) != `{"by":"beta"}` {
		t.Fatalf("before_compact = %+v", bc)
	}
	if got := obs.plugins(hooks.EventBeforeCompact); !reflect.DeepEqual(got, []string{"alpha", "beta"}) {
		t.Fatalf("before_compact called %v; gamma must not be called after beta's compaction", got)
	}

	cg, err := d.Compacting(ctx, &hooks.CompactingEvent{SessionID: "s1", Messages: preparedEvent().Preparation.MessagesToSummarize})
	if err != nil {
		t.Fatal(err)
	}
	wantCtx := []string{"alpha: 1 messages", "beta: 1 messages", "gamma: 1 messages"}
	if !reflect.DeepEqual(cg.Context, wantCtx) || cg.Prompt != "alpha prompt" || cg.PromptFrom != "alpha" {
		t.Fatalf("compacting = %+v", cg)
	}
	if want := `{"alpha":{"from":"alpha"},"beta":{"from":"beta"},"gamma":{"from":"gamma"}}`; string(cg.PreserveData) != want {
		t.Fatalf("preserveData = %s, want %s", cg.PreserveData, want)
	}

	entry := json.RawMessage(`{"type":"compaction","id":"c1","summary":"s","unknown":[1]}`)
	if err := d.Compact(ctx, &hooks.CompactEvent{SessionID: "s1", CompactionEntry: entry}); err != nil {
		t.Fatal(err)
	}

	bt, err := d.BeforeTree(ctx, &hooks.BeforeTreeEvent{SessionID: "s1", TargetID: "e1", UserWantsSummary: true}, hooks.SummaryLimits{MaxSummaryTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if bt.Summary == nil || bt.Summary.Summary != "beta branch summary" || bt.Label != "beta" || bt.Cancelled {
		t.Fatalf("before_tree = %+v", bt)
	}
	if err := d.Tree(ctx, &hooks.TreeEvent{SessionID: "s1", NewLeafID: "e1", OldLeafID: "e9"}); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	sort.Strings(lines)
	var heads []string
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		heads = append(heads, f[0]+" "+f[1])
		if f[1] == string(hooks.EventCompact) && !strings.Contains(f[2], `"compactionEntry":{"type":"compaction","id":"c1","summary":"s","unknown":[1]}`) {
			t.Errorf("compaction entry not carried losslessly: %s", f[2])
		}
	}
	want := []string{"alpha session_compact", "alpha session_tree", "beta session_compact", "beta session_tree", "gamma session_compact", "gamma session_tree"}
	if !reflect.DeepEqual(heads, want) {
		t.Fatalf("notifications = %v, want %v", heads, want)
	}
}

func TestFailuresAcrossTheProcessBoundary(t *testing.T) {
	tests := []struct {
		name      string
		specs     func() []pluginhost.Spec
		wantErr   error
		wantBy    string
		wantOut   []hooks.Outcome
		wantInLog string
	}{
		{
			name: "an error fails open, the next plugin answers",
			specs: func() []pluginhost.Spec {
				return []pluginhost.Spec{spec("bad", 1, "-before-compact", "error"), spec("good", 2, "-before-compact", "compact")}
			},
			wantBy:  "good",
			wantOut: []hooks.Outcome{hooks.OutcomeError, hooks.OutcomeOK},
		},
		{
			name: "a panic in a handler becomes an error",
			specs: func() []pluginhost.Spec {
				return []pluginhost.Spec{spec("panicky", 1, "-before-compact", "panic"), spec("good", 2, "-before-compact", "compact")}
			},
			wantBy:    "good",
			wantOut:   []hooks.Outcome{hooks.OutcomeError, hooks.OutcomeOK},
			wantInLog: "panics on purpose",
		},
		{
			name: "a hanging plugin is cut off at its deadline",
			specs: func() []pluginhost.Spec {
				s := spec("hangs", 1, "-before-compact", "hang")
				s.Timeout = 300 * time.Millisecond
				return []pluginhost.Spec{s, spec("good", 2, "-before-compact", "compact")}
			},
			wantBy:  "good",
			wantOut: []hooks.Outcome{hooks.OutcomeTimeout, hooks.OutcomeOK},
		},
		{
			name: "an invalid compaction is rejected and logged",
			specs: func() []pluginhost.Spec {
				return []pluginhost.Spec{spec("sloppy", 1, "-before-compact", "invalid"), spec("good", 2, "-before-compact", "compact")}
			},
			wantBy:    "good",
			wantOut:   []hooks.Outcome{hooks.OutcomeRejected, hooks.OutcomeOK},
			wantInLog: "rejected a plugin's result",
		},
		{
			name: "failure closed cancels the operation naming the plugin",
			specs: func() []pluginhost.Spec {
				s := spec("strict", 1, "-before-compact", "error")
				s.Failure = hooks.FailureClosed
				return []pluginhost.Spec{s, spec("good", 2, "-before-compact", "compact")}
			},
			wantErr: hooks.ErrPluginFailed,
			wantOut: []hooks.Outcome{hooks.OutcomeError},
		},
		{
			name: "a hang fails closed with a timeout",
			specs: func() []pluginhost.Spec {
				s := spec("strict", 1, "-before-compact", "hang")
				s.Timeout, s.Failure = 300*time.Millisecond, hooks.FailureClosed
				return []pluginhost.Spec{s}
			},
			wantErr: hooks.ErrTimeout,
			wantOut: []hooks.Outcome{hooks.OutcomeTimeout},
		},
		{
			name: "garbage on stderr leaves the host unaffected",
			specs: func() []pluginhost.Spec {
				return []pluginhost.Spec{spec("noisy", 1, "-before-compact", "compact", "-garbage")}
			},
			wantBy:    "noisy",
			wantOut:   []hooks.Outcome{hooks.OutcomeOK},
			wantInLog: `noisy: {"not":"a string"}: k=1`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, buf := bufLogger()
			obs := &observations{}
			_, d := startAll(t, pluginhost.Options{Logger: log}, obs.add, tt.specs()...)
			out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, hooks.ErrPluginFailed) || !strings.Contains(err.Error(), `"strict"`) {
					t.Fatalf("err = %v, want %v naming the plugin", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if out.Plugin != tt.wantBy {
				t.Fatalf("outcome by %q, want %q (%+v)", out.Plugin, tt.wantBy, out)
			}
			if got := obs.outcomes(); !reflect.DeepEqual(got, tt.wantOut) {
				t.Fatalf("outcomes = %v, want %v", got, tt.wantOut)
			}
			if tt.wantInLog != "" {
				// Plugin log lines arrive asynchronously; wait for them.
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(buf.String(), tt.wantInLog) {
					if time.Now().After(deadline) {
						t.Fatalf("log lacks %q:\n%s", tt.wantInLog, buf.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
}

func TestCrashMidCallRestarts(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "crashed")
	log, buf := bufLogger()
	seen := make(chan pluginhost.Observation, 16)
	h, d := startAll(t, pluginhost.Options{Logger: log, MinBackoff: 10 * time.Millisecond, Observe: func(o pluginhost.Observation) { seen <- o }}, nil,
		spec("fragile", 1, "-before-compact", "exit-once", "-marker", marker))
	sup := h.Supervisor("fragile")
	firstPid := sup.Pid()

	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil || out.Compaction != nil {
		t.Fatalf("crashing call: %+v, %v; want no result and no error (failure open)", out, err)
	}
	// The next call waits through the restart and gets the real answer.
	out, err = d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil || out.Compaction == nil || out.Compaction.Summary != "fragile after restart" {
		t.Fatalf("after restart: %+v, %v", out, err)
	}
	if sup.Pid() == firstPid || sup.State() != pluginhost.StateRunning {
		t.Fatalf("pid %d → %d, state %s", firstPid, sup.Pid(), sup.State())
	}
	waitGone(t, firstPid)
	if !strings.Contains(buf.String(), "plugin crashed; restarting it") {
		t.Fatalf("no crash line in log:\n%s", buf.String())
	}
	// The same story reaches Options.Observe, for metrics.
	if o := nextObservation(t, seen); o.Kind != pluginhost.ObservedCrash || o.Plugin != "fragile" || o.PID != firstPid || o.Err == nil {
		t.Errorf("first observation %+v, want the crash of pid %d", o, firstPid)
	}
	if o := nextObservation(t, seen); o.Kind != pluginhost.ObservedRestart || o.PID != sup.Pid() {
		t.Errorf("second observation %+v, want the restart as pid %d", o, sup.Pid())
	}
}

func nextObservation(t *testing.T, seen <-chan pluginhost.Observation) pluginhost.Observation {
	t.Helper()
	select {
	case o := <-seen:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("no observation reported")
		return pluginhost.Observation{}
	}
}

func TestCrashBudgetDisables(t *testing.T) {
	log, buf := bufLogger()
	seen := make(chan pluginhost.Observation, 64)
	h, d := startAll(t, pluginhost.Options{Logger: log, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		Observe: func(o pluginhost.Observation) { seen <- o }}, nil,
		spec("doomed", 1, "-before-compact", "exit"))
	sup := h.Supervisor("doomed")
	for range 3 {
		if _, err := d.BeforeCompact(context.Background(), preparedEvent(), limits); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sup.WaitRunning(ctx); !errors.Is(err, pluginhost.ErrPluginDisabled) {
		t.Fatalf("WaitRunning = %v, want ErrPluginDisabled", err)
	}
	if !strings.Contains(buf.String(), "plugin crashed 3 times within 5m0s; disabled") {
		t.Fatalf("no clear disable line in log:\n%s", buf.String())
	}
	for o := nextObservation(t, seen); o.Kind != pluginhost.ObservedDisabled; o = nextObservation(t, seen) {
		if o.Kind != pluginhost.ObservedCrash && o.Kind != pluginhost.ObservedRestart {
			t.Errorf("unexpected observation %+v", o)
		}
	}
	// A disabled plugin counts as failed: open means no result.
	if out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits); err != nil || out.Compaction != nil {
		t.Fatalf("disabled plugin: %+v, %v", out, err)
	}
}

func TestChecksum(t *testing.T) {
	sum, err := fileSum(scripted)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sha     string
		wantErr error
	}{
		{"matching checksum starts", sum, nil},
		{"mismatch is not started", strings.Repeat("ab", 32), pluginhost.ErrChecksumMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec("checked", 1, "-compact", "record")
			s.SHA256 = tt.sha
			sup := pluginhost.NewSupervisor(s, pluginhost.Options{})
			err := sup.Start(context.Background())
			defer sup.Stop(context.Background())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Start = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && (!strings.Contains(err.Error(), `plugin "checked"`) || sup.Pid() != 0) {
				t.Fatalf("error %q should name the plugin and nothing should run (pid %d)", err, sup.Pid())
			}
		})
	}
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func TestHostAPIRoundTrip(t *testing.T) {
	host := &sdktest.FakeHost{
		Sessions: map[string][]json.RawMessage{"s1": {json.RawMessage(`{"type":"session","id":"s1"}`), json.RawMessage(`{"type":"message","id":"e1"}`)}},
		CompleteFunc: func(_ context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error) {
			return hooks.CompleteResponse{Text: "host says: " + req.Prompt, FinishReason: "stop"}, nil
		},
	}
	log, buf := bufLogger()
	_, d := startAll(t, pluginhost.Options{Logger: log, Host: host}, nil, spec("caller", 1, "-before-compact", "host"))
	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil {
		t.Fatal(err)
	}
	if out.Compaction == nil || out.Compaction.Summary != "host says: 2 entries, [7 7] tokens" {
		t.Fatalf("outcome = %+v", out.Compaction)
	}
	if got, want := host.Calls(), []string{"ReadEntries", "EstimateTokens", "Complete"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("host calls = %v, want %v", got, want)
	}
	if !strings.Contains(buf.String(), "caller: summarized through the host: entries=2") {
		t.Fatalf("plugin's Log not in the host log:\n%s", buf.String())
	}
}

func TestApplyReconciles(t *testing.T) {
	h := pluginhost.NewHost(pluginhost.Options{})
	defer h.StopAll(context.Background())
	ctx := context.Background()
	apply := func(specs ...pluginhost.Spec) []hooks.Plugin {
		t.Helper()
		ps, retire, err := h.Apply(ctx, specs)
		if err != nil {
			t.Fatal(err)
		}
		retire(ctx)
		return ps
	}
	apply(spec("keep", 1, "-compact", "record"), spec("change", 2, "-compact", "record"), spec("drop", 3, "-compact", "record"))
	keepPid, changePid, dropPid := h.Supervisor("keep").Pid(), h.Supervisor("change").Pid(), h.Supervisor("drop").Pid()

	reprioritised := spec("keep", 9, "-compact", "record")
	ps := apply(reprioritised, spec("change", 2, "-compact", "record", "-tree", "record"))
	if len(ps) != 2 || ps[0].Info().Priority != 9 {
		t.Fatalf("plugins = %v", ps)
	}
	if h.Supervisor("keep").Pid() != keepPid {
		t.Fatal("a priority change restarted the plugin")
	}
	if h.Supervisor("change").Pid() == changePid || !h.Supervisor("change").Implements(hooks.EventTree) {
		t.Fatal("a changed plugin was not restarted with its new arguments")
	}
	if h.Supervisor("drop") != nil {
		t.Fatal("a removed plugin is still managed")
	}
	waitGone(t, dropPid)
	waitGone(t, changePid)

	if _, _, err := h.Apply(ctx, []pluginhost.Spec{spec("x", 1), spec("x", 2)}); err == nil {
		t.Fatal("duplicate names accepted")
	}

	// A changed entry that fails to start keeps the old version running.
	broken := spec("keep", 9, "-compact", "record", "-tree", "record")
	broken.SHA256 = strings.Repeat("00", 32)
	ps, retire, err := h.Apply(ctx, []pluginhost.Spec{broken})
	if !errors.Is(err, pluginhost.ErrChecksumMismatch) {
		t.Fatalf("Apply with a bad checksum: %v", err)
	}
	retire(ctx)
	if len(ps) != 1 || h.Supervisor("keep").Pid() != keepPid || h.Supervisor("keep").State() != pluginhost.StateRunning {
		t.Fatal("the old version was not kept running")
	}
	h.StopAll(ctx)
	waitGone(t, keepPid)
}

func TestNotificationBoundedByDeadline(t *testing.T) {
	s := spec("stuck", 1, "-compact", "hang")
	s.Timeout = 200 * time.Millisecond
	record := filepath.Join(t.TempDir(), "notes")
	_, d := startAll(t, pluginhost.Options{}, nil, s, spec("fine", 2, "-compact", "record", "-record", record))
	if err := d.Compact(context.Background(), &hooks.CompactEvent{CompactionEntry: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(record); err != nil || !strings.HasPrefix(string(b), "fine session_compact") {
		t.Fatalf("fine plugin not notified: %q %v", b, err)
	}
}

// TestLargeMessages crosses gRPC's 4 MiB default both ways: host → plugin
// (the event) and plugin → host (the result), and over the broker (entries
// to the plugin, token estimates of them back to the host).
func TestLargeMessages(t *testing.T) {
	big := `{"role":"user","content":"` + strings.Repeat("x", 6<<20) + `"}`
	host := &sdktest.FakeHost{Sessions: map[string][]json.RawMessage{"s1": {json.RawMessage(big), json.RawMessage(big)}}}
	echo := spec("echo", 1, "-before-compact", "echo")
	echo.Limits.SummaryBytes = 16 << 20 // the echo is its summary
	_, d := startAll(t, pluginhost.Options{Host: host}, nil, echo, spec("caller", 2, "-compacting", "none", "-before-compact", "host"))
	ev := preparedEvent()
	ev.Preparation.MessagesToSummarize = []json.RawMessage{json.RawMessage(big)}
	out, err := d.BeforeCompact(context.Background(), ev, hooks.CompactionLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Compaction == nil || out.Compaction.Summary != big {
		t.Fatalf("large echo failed: %+v", out.Plugin)
	}
	res, err := d.Plugins()[1].BeforeCompact(context.Background(), preparedEvent())
	if err != nil {
		t.Fatal(err)
	}
	if want := "completion of: 2 entries, [1572871 1572871] tokens"; res == nil || res.Compaction.Summary != want {
		t.Fatalf("host round trip with large entries: %+v, want %q", res, want)
	}
}

func TestStartAndStopErrors(t *testing.T) {
	missing := pluginhost.NewSupervisor(pluginhost.Spec{Name: "ghost", Path: filepath.Join(t.TempDir(), "nope")}, pluginhost.Options{})
	err := missing.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "plugin ghost did not start") {
		t.Fatalf("missing binary: %v", err)
	}
	if err := missing.WaitRunning(context.Background()); !errors.Is(err, pluginhost.ErrNotStarted) {
		t.Fatalf("never started: %v", err)
	}

	record := filepath.Join(t.TempDir(), "notes")
	sup := pluginhost.NewSupervisor(spec("brief", 1, "-compact", "record", "-record", record), pluginhost.Options{})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(context.Background()); err == nil {
		t.Fatal("second Start accepted")
	}
	pid := sup.Pid()
	sup.Stop(context.Background())
	waitGone(t, pid)
	if b, err := os.ReadFile(record); err != nil || string(b) != "brief closed null\n" {
		t.Fatalf("Close was not called on Shutdown: %q, %v", b, err)
	}
	if err := sup.Compact(context.Background(), &hooks.CompactEvent{}); !errors.Is(err, pluginhost.ErrPluginStopped) {
		t.Fatalf("call after Stop: %v", err)
	}
	if sup.State() != pluginhost.StateStopped {
		t.Fatalf("state %s", sup.State())
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		spec pluginhost.Spec
		ok   bool
	}{
		{pluginhost.Spec{Name: "a", Path: "/bin/a"}, true},
		{pluginhost.Spec{Name: "a", Path: "/bin/a", SHA256: strings.Repeat("0", 64), Failure: hooks.FailureClosed}, true},
		{pluginhost.Spec{Path: "/bin/a"}, false},
		{pluginhost.Spec{Name: "a"}, false},
		{pluginhost.Spec{Name: "a", Path: "/bin/a", SHA256: "xyz"}, false},
		{pluginhost.Spec{Name: "a", Path: "/bin/a", Failure: "maybe"}, false},
		{pluginhost.Spec{Name: "a", Path: "/bin/a", Timeout: -time.Second}, false},
	}
	for i, tt := range tests {
		if err := tt.spec.Validate(); (err == nil) != tt.ok {
			t.Errorf("%d: Validate(%+v) = %v", i, tt.spec, err)
		}
	}
}

// TestReplacedBinaryStopsCalls: a plugin whose file is replaced while it
// runs (its sha256 no longer matches) is not restarted after a crash:
// it is disabled at once, and its calls then stop the operation although
// its failure policy is open. Before, the restarts were retried until the
// crash budget disabled it, and the calls went on without its veto.
func TestReplacedBinaryStopsCalls(t *testing.T) {
	data, err := os.ReadFile(scripted)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "scripted")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum, err := fileSum(bin)
	if err != nil {
		t.Fatal(err)
	}
	s := spec("swapped", 1, "-before-compact", "exit")
	s.Path, s.SHA256, s.Failure = bin, sum, hooks.FailureOpen
	h, d := startAll(t, pluginhost.Options{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}, nil, s)
	// Another build of the plugin, put in place by rename as an upgrade is.
	next := bin + ".new"
	if err := os.WriteFile(next, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}
	// The running process crashes on the call (open: no result) and the
	// restart finds the new file.
	if out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits); err != nil || out.Compaction != nil {
		t.Fatalf("crashing call: %+v, %v", out, err)
	}
	sup := h.Supervisor("swapped")
	if err := sup.WaitRunning(context.Background()); !errors.Is(err, pluginhost.ErrPluginDisabled) || !errors.Is(err, pluginhost.ErrChecksumMismatch) {
		t.Fatalf("WaitRunning = %v, want disabled for the checksum", err)
	}
	if n, _ := sup.Crashes(); n != 1 {
		t.Errorf("%d crashes recorded, want the one crash (no restart retried)", n)
	}
	_, err = d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if !errors.Is(err, hooks.ErrPluginFailed) || !errors.Is(err, pluginhost.ErrChecksumMismatch) {
		t.Fatalf("call after the swap: %v, want the operation stopped for the checksum", err)
	}
}
