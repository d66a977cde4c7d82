package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/sdk/sdktest"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize/builtin"
)

// TestGuardVetoesCompactionOfA400MBSession (PITH_HEAVY=1): a never
// compacted session of ~435 MB whose oldest entry is labelled no-compact,
// and guard plugins with failure OPEN. Its messages to summarize alone
// pass the wire's 256 MiB; before, the event could not be sent and only a
// closed policy kept the compaction from going ahead. Now the event is cut
// to each guard's limits and the guard is always asked: with the default
// limits the labels in force come whole; with 4 KiB budgets they are cut
// too and the example guard pages the whole path. Every time it cancels
// and the file is untouched. It logs the time and the host's peak RSS.
func TestGuardVetoesCompactionOfA400MBSession(t *testing.T) {
	if os.Getenv("PITH_HEAVY") != "1" {
		t.Skip("set PITH_HEAVY=1: generates and compacts a 400 MB session")
	}
	dir := t.TempDir()
	bins := map[string]string{}
	for _, pkg := range []string{"github.com/pith-dev/pith/internal/testplugins/guard", "github.com/pith-dev/pith/plugins/examples/guard"} {
		sub := filepath.Join(dir, filepath.Base(filepath.Dir(pkg)))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		bin, err := sdktest.BuildTo(sub, pkg)
		if err != nil {
			t.Fatal(err)
		}
		bins[filepath.Base(filepath.Dir(pkg))] = bin
	}
	path := filepath.Join(dir, "big.jsonl")
	opts := sessiongen.Benchmark(42, 400_000)
	opts.Compaction, opts.Branch, opts.BranchSummary = 0, 0, 0
	start := time.Now()
	if err := sessiongen.GenerateFile(path, opts); err != nil {
		t.Fatal(err)
	}
	store, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	label := func(target, text string) {
		if _, err := store.Append(session.Draft{Type: session.TypeLabel, Fields: map[string]any{"targetId": target, "label": text}}); err != nil {
			t.Fatal(err)
		}
	}
	// The no-compact label is on the oldest entry, and 200 later labels
	// bury it: a plugin whose labels are cut must page the whole path.
	label(store.Tree().Path(store.Leaf())[0].ID, "no-compact")
	for i := range 200 {
		label(store.Leaf().ID, fmt.Sprintf("checkpoint-%03d", i))
	}
	before, _ := os.Stat(path)
	t.Logf("generated and opened %d MB in %s; peak RSS so far %s", before.Size()>>20, time.Since(start).Round(time.Millisecond), peakRSS())

	for _, tc := range []struct {
		name, guard string
		limits      hooks.Limits
		timeout     time.Duration
	}{
		// Default limits: labels whole, path and messages cut.
		{"sdk-readme guard, default limits", "testplugins", hooks.Limits{}, 0},
		{"example guard, default limits", "examples", hooks.Limits{}, 0},
		// 4 KiB budgets: the labels are cut too, so the guard pages all
		// 400 000 entries through the host API.
		{"example guard pages the path", "examples", hooks.Limits{PathEntriesBytes: 4 << 10, MessagesBytes: 4 << 10}, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, buf := bufLogger()
			sp := pluginhost.Spec{Name: "guard", Path: bins[tc.guard], Failure: hooks.FailureOpen, Limits: tc.limits, Timeout: tc.timeout}
			_, d := startAll(t, pluginhost.Options{Logger: log, Host: &engine.HostAPI{Lookup: engine.SingleSession(store)}}, nil, sp)
			eng := engine.New(store, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: engine.DefaultSettings(), Hooks: d, Logger: log})
			start := time.Now()
			_, err := eng.Compact(context.Background(), "")
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
			t.Logf("host peak RSS %s; Go Sys %d MB", peakRSS(), ms.Sys>>20)
		})
	}
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
