package pluginhost_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/hooks/pluginhost"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// TestGuardVetoesCompactionOfA400MBSession (PITH_HEAVY=1): a never
// compacted session of ~400 MB labelled no-compact, the guard plugin with
// failure OPEN. Its messages to summarize alone pass the wire's 256 MiB;
// before, the event could not be sent and only a closed policy kept the
// compaction from going ahead. Now the event is cut to the guard's limits
// (defaults), the guard is asked, finds the label and cancels: the file is
// untouched. It logs the time and the host's peak RSS.
func TestGuardVetoesCompactionOfA400MBSession(t *testing.T) {
	if os.Getenv("PITH_HEAVY") != "1" {
		t.Skip("set PITH_HEAVY=1: generates and compacts a 400 MB session")
	}
	dir := t.TempDir()
	guard, err := sdktest.BuildTo(dir, "github.com/pith-dev/pith/internal/testplugins/guard")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "big.jsonl")
	opts := sessiongen.Benchmark(42, 400_000)
	opts.Compaction, opts.Branch, opts.BranchSummary = 0, 0, 0
	start := time.Now()
	if err := sessiongen.GenerateFile(path, opts); err != nil {
		t.Fatal(err)
	}
	store, err := session.Open(path, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Append(session.Draft{Type: session.TypeLabel, Fields: map[string]any{"targetId": store.Leaf().ID, "label": "no-compact"}}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	t.Logf("generated and opened %d MB in %s; peak RSS so far %s", before.Size()>>20, time.Since(start).Round(time.Millisecond), peakRSS())

	log, buf := bufLogger()
	sp := pluginhost.Spec{Name: "guard", Path: guard, Failure: hooks.FailureOpen}
	_, d := startAll(t, pluginhost.Options{Logger: log, Host: &engine.HostAPI{Lookup: engine.SingleSession(store)}}, nil, sp)
	eng := engine.New(store, engine.Options{Settings: engine.DefaultSettings(), Hooks: d, Logger: log})
	start = time.Now()
	_, err = eng.Compact(context.Background(), "")
	elapsed := time.Since(start)
	if !errors.Is(err, engine.ErrCancelled) {
		t.Fatalf("compaction of a no-compact session: %v\n%s", err, buf.String())
	}
	after, _ := os.Stat(path)
	if after.Size() != before.Size() {
		t.Errorf("the session changed: %d → %d bytes", before.Size(), after.Size())
	}
	if strings.Contains(buf.String(), "host error") {
		t.Errorf("a host error was logged:\n%s", buf.String())
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("refused in %s: %v", elapsed.Round(time.Millisecond), err)
	t.Logf("host peak RSS %s; Go heap peak-ish (Sys) %d MB", peakRSS(), ms.Sys>>20)
}

// peakRSS is this process's VmHWM.
func peakRSS() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	return "unknown"
}
