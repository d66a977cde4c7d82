package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/server"
)

// TestSoakServe (PITH_HEAVY=1) runs `pith serve` with two example plugins
// under what an operator's day looks like, compressed: PITH_SOAK_CLIENTS
// agents (default 50) appending turns and compacting (threshold and
// manual) for PITH_SOAK_DURATION (default 10m), the configuration
// rewritten every second (alternately renamed into place and rewritten in
// place, so the watcher also meets half-written files), and one plugin
// process SIGKILLed every 10 s. It samples the daemon's resident memory
// and open descriptors every 5 s and requires both to stay flat (the last
// sample within a margin of the one taken after the first minute), and
// reads every session back: each acknowledged message exactly once, none
// twice, every entry's parent before it. Figures go to the test log.
// soakTurns is how many turns a soak agent writes to one session.
const soakTurns = 150

func TestSoakServe(t *testing.T) {
	if os.Getenv("PITH_HEAVY") != "1" {
		t.Skip("set PITH_HEAVY=1 to soak (10 minutes)")
	}
	clients := envNum(t, "PITH_SOAK_CLIENTS", 50)
	dur := 10 * time.Minute
	if v := os.Getenv("PITH_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PITH_SOAK_DURATION: %v", err)
		}
		dur = d
	}
	guard, audit := buildExamplePlugins(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	token := "soak-token"
	// gen goes into the plugins' environment: a new value is a changed
	// entry, which the reload starts afresh. Without it the kills spend
	// each plugin's crash budget (3 in 5 minutes) within a minute and the
	// rest of the soak runs with both disabled, as designed.
	cfg := func(keepRecent, gen int) map[string]any {
		env := map[string]any{"SOAK_GEN": strconv.Itoa(gen)}
		return map[string]any{
			"contextWindow": 6000,
			"compaction":    map[string]any{"reserveTokens": 2000, "keepRecentTokens": keepRecent},
			"sessions":      map[string]any{"root": "sessions"},
			"server": map[string]any{
				"shutdownTimeout":          "5s",
				"maxCallsInFlight":         4 * clients,
				"maxOpenSessionsPerCaller": 2 * clients,
				"tokens":                   []map[string]any{{"name": "soak", "sha256": server.HashToken(token), "prefix": "soak/"}},
			},
			"plugins": []map[string]any{
				{"name": "guard", "path": guard, "env": env},
				{"name": "audit", "path": audit, "args": []string{"--file", filepath.Join(dir, "audit.jsonl")}, "env": env},
			},
		}
	}
	writeConfigMap(t, cfgPath, cfg(1200, 0))
	p := startServe(t, cfgPath)
	pid := p.cmd.Process.Pid

	deadline := time.Now().Add(dur)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()

	// The operator: a reload every second, alternating how the file is saved.
	var reloads, kills atomic.Int64
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			keep, gen := 1200-300*(i%3), i/30
			if i%2 == 0 {
				writeConfigMap(t, cfgPath, cfg(keep, gen)) // write and rename
			} else {
				writeInPlace(t, cfgPath, cfg(keep, gen)) // truncate, then write
			}
			reloads.Add(1)
		}
	}()
	// A plugin process killed every 10 s: the supervisor starts it again.
	go func() {
		defer bg.Done()
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if kids := childPIDs(pid); len(kids) > 0 {
				_ = syscall.Kill(kids[int(kills.Load())%len(kids)], syscall.SIGKILL)
				kills.Add(1)
			}
		}
	}()

	// Resident memory and descriptors, every 5 s.
	type sample struct {
		at       time.Duration
		rssKB    int
		fds      int
		children int
	}
	var samplesMu sync.Mutex
	var samples []sample
	start := time.Now()
	bg.Add(1)
	go func() {
		defer bg.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
			s := sample{time.Since(start), procKB(t, pid, "VmRSS"), len(fds), len(childPIDs(pid))}
			samplesMu.Lock()
			samples = append(samples, s)
			samplesMu.Unlock()
		}
	}()

	// The agents.
	c, err := client.Dial(p.addr, client.WithToken(token), client.WithBusyRetries(50))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var turns, manual, failedCalls atomic.Int64
	var errMu sync.Mutex
	errKinds := map[string]int{}
	var agents sync.WaitGroup
	var writersMu sync.Mutex
	var writers []*turnWriter
	newWriter := func(i, gen int) *turnWriter {
		s, err := c.Create(context.Background(), fmt.Sprintf("soak/s%02d-%d.jsonl", i, gen), "/work")
		if err != nil {
			t.Error(err)
			return nil
		}
		w := &turnWriter{name: s.Path, s: s}
		writersMu.Lock()
		writers = append(writers, w)
		writersMu.Unlock()
		return w
	}
	for i := range clients {
		agents.Add(1)
		go func() {
			defer agents.Done()
			w := newWriter(i, 0)
			for n := 0; w != nil && ctx.Err() == nil; n++ {
				// An agent moves on to a new session every soakTurns
				// turns, as agents do, so that what the daemon holds
				// for open sessions stays the same size and a leak
				// shows as growth.
				if n > 0 && n%soakTurns == 0 {
					_ = w.s.Close(context.Background())
					if w = newWriter(i, n/soakTurns); w == nil {
						return
					}
				}
				err := w.turn(ctx, fmt.Sprintf("c%02d.%d", i, n))
				if err == nil && n%7 == 6 {
					_, err = w.s.Compact(ctx, "", nil)
					if errors.Is(err, client.ErrFailedPrecondition) {
						err = nil // nothing to compact just after a threshold compaction
					} else if err == nil {
						manual.Add(1)
					}
				}
				if err != nil {
					if ctx.Err() != nil || time.Until(deadline) < 2*time.Second {
						return // the daemon's copy of the deadline may fire first
					}
					failedCalls.Add(1)
					errMu.Lock()
					errKinds[errKind(err)]++
					errMu.Unlock()
					continue
				}
				turns.Add(1)
			}
		}()
	}
	agents.Wait()
	bg.Wait()

	t.Logf("%v: %d clients, %d sessions, %d turns, %d manual compactions, %d failed calls %v, %d config saves, %d plugin kills",
		dur, clients, len(writers), turns.Load(), manual.Load(), failedCalls.Load(), errKinds, reloads.Load(), kills.Load())
	for _, s := range samples {
		t.Logf("  %6.0fs  rss %6d kB  fds %4d  plugins %d", s.at.Seconds(), s.rssKB, s.fds, s.children)
	}
	if len(samples) >= 14 {
		base, last := samples[11], samples[len(samples)-1] // after the first minute
		if last.rssKB > base.rssKB*3/2+32<<10 {
			t.Errorf("resident memory grew from %d kB at %.0fs to %d kB", base.rssKB, base.at.Seconds(), last.rssKB)
		}
		if last.fds > base.fds+32 {
			t.Errorf("open descriptors grew from %d at %.0fs to %d", base.fds, base.at.Seconds(), last.fds)
		}
	}
	if want := int64(dur / (20 * time.Second)); kills.Load() < want {
		t.Errorf("%d plugin kills, want at least %d: the plugins were not running", kills.Load(), want)
	}
	if turns.Load() == 0 {
		t.Fatal("no turn succeeded")
	}
	for _, w := range writers {
		f, err := session.Load(filepath.Join(dir, "sessions", w.name))
		if err != nil {
			t.Fatal(err)
		}
		checkEntries(t, w.name, f, writers)
	}
}

// writeInPlace rewrites path by truncating it and writing the new bytes
// in two halves, as `cat new > file` or an editor that truncates first
// does: the watcher can see the file empty and half written.
func writeInPlace(t *testing.T, path string, cfg map[string]any) {
	t.Helper()
	tmp := path + ".next"
	writeConfigMap(t, tmp, cfg)
	data, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(tmp)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	half := len(data) / 2
	if _, err := f.Write(data[:half]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := f.Write(data[half:]); err != nil {
		t.Fatal(err)
	}
}

// errKind names an error by its client sentinel for the soak's summary.
func errKind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{client.ErrAborted, "aborted"}, {client.ErrBusy, "busy"}, {client.ErrUnauthenticated, "unauthenticated"},
		{client.ErrPermissionDenied, "permission"}, {client.ErrUnavailable, "unavailable"},
		{client.ErrResourceExhausted, "exhausted"}, {client.ErrFailedPrecondition, "precondition"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return strconv.Quote(firstLine(err.Error()))
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' || i > 80 {
			return s[:i]
		}
	}
	return s
}
