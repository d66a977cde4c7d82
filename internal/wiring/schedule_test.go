package wiring

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/testproc"
	"github.com/pith-dev/pith/sdk/sdktest"
)

var compactOrder = []hooks.EventID{hooks.EventBeforeCompact, hooks.EventCompacting, hooks.EventCompact}

// scriptedPlugin builds the scripted test plugin for t.
func scriptedPlugin(t *testing.T) string {
	t.Helper()
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// eventSpec is a spec for the scripted plugin bin, named name, whose
// configuration lists events.
func eventSpec(bin, name string, events []hooks.EventID, args ...string) pluginhost.Spec {
	return pluginhost.Spec{Name: name, Path: bin, Args: append([]string{"-name", name}, args...), Priority: 10, Timeout: 10 * time.Second, Events: events}
}

// newTestSchedule starts specs through a schedule and stops it at cleanup.
func newTestSchedule(t *testing.T, specs ...pluginhost.Spec) (*schedule, map[string]*pluginhost.Supervisor, error) {
	t.Helper()
	q := newSchedule(pluginhost.Options{Logger: hclog.NewNullLogger()}, compactOrder)
	t.Cleanup(q.stop)
	ps, err := q.start(context.Background(), specs)
	sups := map[string]*pluginhost.Supervisor{}
	for _, p := range ps {
		sups[p.Info().Name] = p.(*pluginhost.Supervisor)
	}
	return q, sups, err
}

// waitStopped polls for the supervisor to reach StateStopped within a
// generous bound (stops run in the background).
func waitStopped(t *testing.T, s *pluginhost.Supervisor) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for s.State() != pluginhost.StateStopped {
		if time.Now().After(deadline) {
			t.Fatalf("plugin %s is %s, want stopped", s.Info().Name, s.State())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestScheduleRunsEachPluginForItsStretch: a failure: closed plugin runs
// when start returns; the first event's plugin when its event is reached;
// the others start in the background and are there when their event is
// reached; a plugin stops as soon as its last event has passed — also one
// whose event never fired — and stop leaves no process behind.
func TestScheduleRunsEachPluginForItsStretch(t *testing.T) {
	bin := scriptedPlugin(t)
	rec := filepath.Join(t.TempDir(), "record")
	closed := eventSpec(bin, "closed", []hooks.EventID{hooks.EventCompact}, "-compact", "record", "-record", rec)
	closed.Failure = hooks.FailureClosed
	q, sups, err := newTestSchedule(t,
		eventSpec(bin, "first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "compact"),
		eventSpec(bin, "keeper", []hooks.EventID{hooks.EventCompacting}, "-compacting", "context"),
		eventSpec(bin, "notified", []hooks.EventID{hooks.EventCompact}, "-compact", "record", "-record", rec),
		closed,
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(sups) != 4 {
		t.Fatalf("Start returned %d plugins, want 4", len(sups))
	}
	if st := sups["closed"].State(); st != pluginhost.StateRunning {
		t.Errorf("the failure: closed plugin is %s when start returns, want running", st)
	}
	for _, e := range compactOrder {
		if !q.handles(e) {
			t.Errorf("Handles(%s) = false before the plugins started", e)
		}
	}
	d, err := dispatch.NewDispatcher(dispatch.Options{Logger: hclog.NewNullLogger()}, sups["first"], sups["keeper"], sups["notified"], sups["closed"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	q.reach(ctx, hooks.EventBeforeCompact)
	if st := sups["first"].State(); st != pluginhost.StateRunning {
		t.Fatalf("the first event's plugin is %s once the event is reached, want running", st)
	}
	out, err := d.BeforeCompact(ctx, &hooks.BeforeCompactEvent{
		SessionID: "s1",
		Preparation: hooks.Preparation{
			FirstKeptEntryID:    "e3",
			TokensBefore:        5000,
			MessagesToSummarize: []json.RawMessage{json.RawMessage(`{"role":"user","content":"hi"}`)},
		},
		PathEntries: []json.RawMessage{json.RawMessage(`{"type":"message","id":"e1"}`)},
		Reason:      hooks.ReasonThreshold,
	}, hooks.CompactionLimits{})
	if err != nil || out.Compaction == nil {
		t.Fatalf("BeforeCompact = %+v, %v; want the first plugin's compaction", out, err)
	}
	q.passed(hooks.EventBeforeCompact)
	waitStopped(t, sups["first"])
	if st := sups["notified"].State(); st == pluginhost.StateStopped {
		t.Fatal("a plugin of a later event was stopped")
	}

	// session.compacting does not fire (a plugin supplied the compaction):
	// reaching session_compact passes it, and its plugin stops.
	q.reach(ctx, hooks.EventCompact)
	if st := sups["notified"].State(); st != pluginhost.StateRunning {
		t.Fatalf("notified is %s after reach, want running", st)
	}
	if err := d.Compact(ctx, &hooks.CompactEvent{SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, sups["keeper"])
	q.passed(hooks.EventCompact)
	q.stop()
	for name, s := range sups {
		if st := s.State(); st != pluginhost.StateStopped {
			t.Errorf("%s is %s after stop", name, st)
		}
	}
	if left := testproc.Children(t); len(left) > 0 {
		t.Fatalf("plugin processes left after stop: %v", left)
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), " session_compact "); n != 2 {
		t.Errorf("%d session_compact notifications recorded, want 2 (notified and closed):\n%s", n, data)
	}
	if n := strings.Count(string(data), " closed null"); n != 2 {
		t.Errorf("%d plugins ran their Close, want the 2 that started:\n%s", n, data)
	}
}

// TestScheduleClosedPluginThatCannotStart: a failure: closed plugin of a
// later event is started before the operation, so its failure is known
// before anything happens; it is left out of the returned plugins.
func TestScheduleClosedPluginThatCannotStart(t *testing.T) {
	bin := scriptedPlugin(t)
	bad := eventSpec(bin, "veto", []hooks.EventID{hooks.EventCompact})
	bad.Path = filepath.Join(t.TempDir(), "missing")
	bad.Failure = hooks.FailureClosed
	_, sups, err := newTestSchedule(t, eventSpec(bin, "first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "none"), bad)
	if err == nil || !strings.Contains(err.Error(), "veto") {
		t.Fatalf("start error = %v, want the closed plugin's start failure", err)
	}
	if _, ok := sups["veto"]; ok {
		t.Error("a plugin that failed to start was returned")
	}
	if _, ok := sups["first"]; !ok {
		t.Error("the other plugin was dropped")
	}
}

// TestScheduleStopRightAfterStart: stopping while background starts are
// under way cuts them short and still leaves no process.
func TestScheduleStopRightAfterStart(t *testing.T) {
	bin := scriptedPlugin(t)
	q, sups, err := newTestSchedule(t,
		eventSpec(bin, "first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "none"),
		eventSpec(bin, "b", []hooks.EventID{hooks.EventCompacting}, "-compacting", "context"),
		eventSpec(bin, "c", []hooks.EventID{hooks.EventCompact}, "-compact", "record", "-record", filepath.Join(t.TempDir(), "r")),
	)
	if err != nil {
		t.Fatal(err)
	}
	q.stop()
	for name, s := range sups {
		if st := s.State(); st != pluginhost.StateStopped {
			t.Errorf("%s is %s after stop", name, st)
		}
	}
	if left := testproc.Children(t); len(left) > 0 {
		t.Fatalf("plugin processes left after stop: %v", left)
	}
}

// TestScheduleUnconfiguredEventsStartFirst: a plugin whose configuration
// lists no events is started before the operation (only Describe says what
// it handles) and stops once every event it described has passed.
func TestScheduleUnconfiguredEventsStartFirst(t *testing.T) {
	bin := scriptedPlugin(t)
	q, sups, err := newTestSchedule(t, eventSpec(bin, "any", nil, "-compacting", "context"))
	if err != nil {
		t.Fatal(err)
	}
	s := sups["any"]
	if st := s.State(); st != pluginhost.StateRunning {
		t.Fatalf("unconfigured plugin is %s when start returns", st)
	}
	if q.handles(hooks.EventBeforeCompact) || !q.handles(hooks.EventCompacting) {
		t.Error("Handles does not follow what the plugin described")
	}
	q.passed(hooks.EventBeforeCompact)
	if st := s.State(); st == pluginhost.StateStopped {
		t.Fatal("stopped before its event passed")
	}
	q.passed(hooks.EventCompacting)
	waitStopped(t, s)
}

// TestScheduleRefusesDuplicateNames mirrors pluginhost.Host.Apply's checks.
func TestScheduleRefusesDuplicateNames(t *testing.T) {
	bin := scriptedPlugin(t)
	_, _, err := newTestSchedule(t, eventSpec(bin, "same", nil), eventSpec(bin, "same", nil))
	if err == nil || !strings.Contains(err.Error(), `"same" is used twice`) {
		t.Fatalf("two plugins with one name: %v, want a refusal naming it", err)
	}
}

// TestScheduleOnReach: a plugin whose events may be skipped is started
// only when the operation reaches one of them — never, when they are
// skipped — unless it fails closed.
func TestScheduleOnReach(t *testing.T) {
	bin := scriptedPlugin(t)
	newSkippable := func(t *testing.T, closed bool) (*schedule, *pluginhost.Supervisor) {
		t.Helper()
		q := newSchedule(pluginhost.Options{Logger: hclog.NewNullLogger()}, compactOrder, hooks.EventCompacting)
		t.Cleanup(q.stop)
		keeper := eventSpec(bin, "keeper", []hooks.EventID{hooks.EventCompacting}, "-compacting", "context")
		if closed {
			keeper.Failure = hooks.FailureClosed
		}
		ps, err := q.start(context.Background(), []pluginhost.Spec{eventSpec(bin, "first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "none"), keeper})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.Info().Name == "keeper" {
				return q, p.(*pluginhost.Supervisor)
			}
		}
		t.Fatal("keeper not returned")
		return nil, nil
	}
	t.Run("skipped", func(t *testing.T) {
		q, keeper := newSkippable(t, false)
		if st := keeper.State(); st != pluginhost.StateNew {
			t.Fatalf("keeper is %s after start, want new (not started)", st)
		}
		if !q.handles(hooks.EventCompacting) {
			t.Error("Handles(session.compacting) = false for a plugin not started yet")
		}
		q.passed(hooks.EventBeforeCompact, hooks.EventCompacting)
		waitStopped(t, keeper)
		q.stop()
		if left := testproc.Children(t); len(left) > 0 {
			t.Fatalf("plugin processes left after stop: %v", left)
		}
	})
	t.Run("reached", func(t *testing.T) {
		q, keeper := newSkippable(t, false)
		q.reach(context.Background(), hooks.EventCompacting)
		if st := keeper.State(); st != pluginhost.StateRunning {
			t.Fatalf("keeper is %s after reach, want running", st)
		}
	})
	t.Run("closed", func(t *testing.T) {
		_, keeper := newSkippable(t, true)
		if st := keeper.State(); st != pluginhost.StateRunning {
			t.Fatalf("a failure: closed keeper is %s after start, want running", st)
		}
	})
}

// TestScheduleLaunchDoesNotWait: launch and ready return while a plugin of
// the first event is still starting, so that the caller's work before the
// event (opening the session) overlaps the start; reach waits for it.
func TestScheduleLaunchDoesNotWait(t *testing.T) {
	bin := scriptedPlugin(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// The plugin's process blocks until the test opens the gate.
	script := filepath.Join(dir, "slow-start")
	body := "#!/bin/sh\nread _ < '" + gate + "'\nexec '" + bin + "' \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	sp := eventSpec(bin, "first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "none")
	sp.Path = script
	q := newSchedule(pluginhost.Options{Logger: hclog.NewNullLogger()}, compactOrder)
	t.Cleanup(q.stop)
	if err := q.launch(context.Background(), []pluginhost.Spec{sp}); err != nil {
		t.Fatal(err)
	}
	ps, err := q.ready()
	if err != nil || len(ps) != 1 {
		t.Fatalf("Ready = %v, %v; want the one plugin", ps, err)
	}
	first := ps[0].(*pluginhost.Supervisor)
	if st := first.State(); st != pluginhost.StateNew {
		t.Fatalf("the plugin is %s after launch and ready, want new (still starting)", st)
	}
	if !q.handles(hooks.EventBeforeCompact) {
		t.Error("Handles(session_before_compact) = false for the starting plugin")
	}
	w, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	q.reach(context.Background(), hooks.EventBeforeCompact)
	if st := first.State(); st != pluginhost.StateRunning {
		t.Fatalf("the plugin is %s once its event is reached, want running", st)
	}
}
