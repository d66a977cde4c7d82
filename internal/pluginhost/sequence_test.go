package pluginhost_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
)

var compactOrder = []hooks.EventID{hooks.EventBeforeCompact, hooks.EventCompacting, hooks.EventCompact}

func eventSpec(name string, events []hooks.EventID, args ...string) pluginhost.Spec {
	sp := spec(name, 10, args...)
	sp.Events = events
	return sp
}

// newSequence starts specs through a Sequence and stops it at cleanup.
func newSequence(t *testing.T, specs ...pluginhost.Spec) (*pluginhost.Sequence, map[string]*pluginhost.Supervisor, error) {
	t.Helper()
	q := pluginhost.NewSequence(pluginhost.Options{Logger: hclog.NewNullLogger()}, compactOrder)
	t.Cleanup(q.Stop)
	ps, err := q.Start(context.Background(), specs)
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

// scriptedChildren lists the live processes of the scripted test plugin
// started by this test process.
func scriptedChildren(t *testing.T) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	me := os.Getpid()
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != me {
			continue
		}
		if exe, _ := os.Readlink(filepath.Join(filepath.Dir(s), "exe")); exe == scripted {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			out = append(out, pid)
		}
	}
	return out
}

// TestSequenceRunsEachPluginForItsStretch: a failure: closed plugin runs
// when Start returns; the first event's plugin when its event is reached;
// the others start in the background and are there when their event is
// reached; a plugin stops as soon as its last event has passed — also one
// whose event never fired — and Stop leaves no process behind.
func TestSequenceRunsEachPluginForItsStretch(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "record")
	closed := eventSpec("closed", []hooks.EventID{hooks.EventCompact}, "-compact", "record", "-record", rec)
	closed.Failure = hooks.FailureClosed
	q, sups, err := newSequence(t,
		eventSpec("first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "compact"),
		eventSpec("keeper", []hooks.EventID{hooks.EventCompacting}, "-compacting", "context"),
		eventSpec("notified", []hooks.EventID{hooks.EventCompact}, "-compact", "record", "-record", rec),
		closed,
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(sups) != 4 {
		t.Fatalf("Start returned %d plugins, want 4", len(sups))
	}
	if st := sups["closed"].State(); st != pluginhost.StateRunning {
		t.Errorf("the failure: closed plugin is %s when Start returns, want running", st)
	}
	for _, e := range compactOrder {
		if !q.Handles(e) {
			t.Errorf("Handles(%s) = false before the plugins started", e)
		}
	}
	d, err := dispatch.NewDispatcher(dispatch.Options{Logger: hclog.NewNullLogger()}, sups["first"], sups["keeper"], sups["notified"], sups["closed"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	q.Reach(ctx, hooks.EventBeforeCompact)
	if st := sups["first"].State(); st != pluginhost.StateRunning {
		t.Fatalf("the first event's plugin is %s once the event is reached, want running", st)
	}
	out, err := d.BeforeCompact(ctx, preparedEvent(), hooks.CompactionLimits{})
	if err != nil || out.Compaction == nil {
		t.Fatalf("BeforeCompact = %+v, %v; want the first plugin's compaction", out, err)
	}
	q.Passed(hooks.EventBeforeCompact)
	waitStopped(t, sups["first"])
	if st := sups["notified"].State(); st == pluginhost.StateStopped {
		t.Fatal("a plugin of a later event was stopped")
	}

	// session.compacting does not fire (a plugin supplied the compaction):
	// reaching session_compact passes it, and its plugin stops.
	q.Reach(ctx, hooks.EventCompact)
	if st := sups["notified"].State(); st != pluginhost.StateRunning {
		t.Fatalf("notified is %s after Reach, want running", st)
	}
	if err := d.Compact(ctx, &hooks.CompactEvent{SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, sups["keeper"])
	q.Passed(hooks.EventCompact)
	q.Stop()
	for name, s := range sups {
		if st := s.State(); st != pluginhost.StateStopped {
			t.Errorf("%s is %s after Stop", name, st)
		}
	}
	if left := scriptedChildren(t); len(left) > 0 {
		t.Fatalf("plugin processes left after Stop: %v", left)
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

// TestSequenceClosedPluginThatCannotStart: a failure: closed plugin of a
// later event is started before the operation, so its failure is known
// before anything happens; it is left out of the returned plugins.
func TestSequenceClosedPluginThatCannotStart(t *testing.T) {
	bad := eventSpec("veto", []hooks.EventID{hooks.EventCompact})
	bad.Path = filepath.Join(t.TempDir(), "missing")
	bad.Failure = hooks.FailureClosed
	_, sups, err := newSequence(t, eventSpec("first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "none"), bad)
	if err == nil || !strings.Contains(err.Error(), "veto") {
		t.Fatalf("Start error = %v, want the closed plugin's start failure", err)
	}
	if _, ok := sups["veto"]; ok {
		t.Error("a plugin that failed to start was returned")
	}
	if _, ok := sups["first"]; !ok {
		t.Error("the other plugin was dropped")
	}
}

// TestSequenceStopRightAfterStart: stopping while background starts are
// under way cuts them short and still leaves no process.
func TestSequenceStopRightAfterStart(t *testing.T) {
	q, sups, err := newSequence(t,
		eventSpec("first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "none"),
		eventSpec("b", []hooks.EventID{hooks.EventCompacting}, "-compacting", "context"),
		eventSpec("c", []hooks.EventID{hooks.EventCompact}, "-compact", "record", "-record", filepath.Join(t.TempDir(), "r")),
	)
	if err != nil {
		t.Fatal(err)
	}
	q.Stop()
	for name, s := range sups {
		if st := s.State(); st != pluginhost.StateStopped {
			t.Errorf("%s is %s after Stop", name, st)
		}
	}
	if left := scriptedChildren(t); len(left) > 0 {
		t.Fatalf("plugin processes left after Stop: %v", left)
	}
}

// TestSequenceUnconfiguredEventsStartFirst: a plugin whose configuration
// lists no events is started before the operation (only Describe says what
// it handles) and stops once every event it described has passed.
func TestSequenceUnconfiguredEventsStartFirst(t *testing.T) {
	q, sups, err := newSequence(t, spec("any", 10, "-compacting", "context"))
	if err != nil {
		t.Fatal(err)
	}
	s := sups["any"]
	if st := s.State(); st != pluginhost.StateRunning {
		t.Fatalf("unconfigured plugin is %s when Start returns", st)
	}
	if q.Handles(hooks.EventBeforeCompact) || !q.Handles(hooks.EventCompacting) {
		t.Error("Handles does not follow what the plugin described")
	}
	q.Passed(hooks.EventBeforeCompact)
	if st := s.State(); st == pluginhost.StateStopped {
		t.Fatal("stopped before its event passed")
	}
	q.Passed(hooks.EventCompacting)
	waitStopped(t, s)
}

// TestSequenceRefusesDuplicateNames mirrors Host.Apply's checks.
func TestSequenceRefusesDuplicateNames(t *testing.T) {
	_, _, err := newSequence(t, spec("same", 10), spec("same", 20))
	if err == nil || !strings.Contains(err.Error(), `"same" is used twice`) {
		t.Fatalf("two plugins with one name: %v, want a refusal naming it", err)
	}
}

// TestSequenceOnReach: a plugin whose events may be skipped is started
// only when the operation reaches one of them — never, when they are
// skipped — unless it fails closed.
func TestSequenceOnReach(t *testing.T) {
	newSkippable := func(t *testing.T, closed bool) (*pluginhost.Sequence, *pluginhost.Supervisor) {
		t.Helper()
		q := pluginhost.NewSequence(pluginhost.Options{Logger: hclog.NewNullLogger()}, compactOrder)
		t.Cleanup(q.Stop)
		q.OnReach(hooks.EventCompacting)
		keeper := eventSpec("keeper", []hooks.EventID{hooks.EventCompacting}, "-compacting", "context")
		if closed {
			keeper.Failure = hooks.FailureClosed
		}
		ps, err := q.Start(context.Background(), []pluginhost.Spec{eventSpec("first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "none"), keeper})
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
			t.Fatalf("keeper is %s after Start, want new (not started)", st)
		}
		if !q.Handles(hooks.EventCompacting) {
			t.Error("Handles(session.compacting) = false for a plugin not started yet")
		}
		q.Passed(hooks.EventBeforeCompact, hooks.EventCompacting)
		waitStopped(t, keeper)
		q.Stop()
		if left := scriptedChildren(t); len(left) > 0 {
			t.Fatalf("plugin processes left after Stop: %v", left)
		}
	})
	t.Run("reached", func(t *testing.T) {
		q, keeper := newSkippable(t, false)
		q.Reach(context.Background(), hooks.EventCompacting)
		if st := keeper.State(); st != pluginhost.StateRunning {
			t.Fatalf("keeper is %s after Reach, want running", st)
		}
	})
	t.Run("closed", func(t *testing.T) {
		_, keeper := newSkippable(t, true)
		if st := keeper.State(); st != pluginhost.StateRunning {
			t.Fatalf("a failure: closed keeper is %s after Start, want running", st)
		}
	})
}

// TestSequenceLaunchDoesNotWait: Launch and Ready return while a plugin of
// the first event is still starting, so that the caller's work before the
// event (opening the session) overlaps the start; Reach waits for it.
func TestSequenceLaunchDoesNotWait(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// The plugin's process blocks until the test opens the gate.
	script := filepath.Join(dir, "slow-start")
	body := "#!/bin/sh\nread _ < '" + gate + "'\nexec '" + scripted + "' \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	sp := eventSpec("first", []hooks.EventID{hooks.EventBeforeCompact}, "-before-compact", "none")
	sp.Path = script
	q := pluginhost.NewSequence(pluginhost.Options{Logger: hclog.NewNullLogger()}, compactOrder)
	t.Cleanup(q.Stop)
	if err := q.Launch(context.Background(), []pluginhost.Spec{sp}); err != nil {
		t.Fatal(err)
	}
	ps, err := q.Ready()
	if err != nil || len(ps) != 1 {
		t.Fatalf("Ready = %v, %v; want the one plugin", ps, err)
	}
	first := ps[0].(*pluginhost.Supervisor)
	if st := first.State(); st != pluginhost.StateNew {
		t.Fatalf("the plugin is %s after Launch and Ready, want new (still starting)", st)
	}
	if !q.Handles(hooks.EventBeforeCompact) {
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
	q.Reach(context.Background(), hooks.EventBeforeCompact)
	if st := first.State(); st != pluginhost.StateRunning {
		t.Fatalf("the plugin is %s once its event is reached, want running", st)
	}
}
