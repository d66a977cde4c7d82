package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	runtimemetrics "runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store/postgres"
	"go.uber.org/goleak"
)

// TestLoad drives PITH_LOAD_SESSIONS sessions (default 20) concurrently
// for PITH_LOAD_DURATION (default 8s) against one in-process server:
// appends, turns that cross the threshold, manual compactions and context
// reads. Then every session is read back: no line skipped, every appended
// message present once. It logs appends/s and p50/p99 of Append and
// GetContext as the client sees them (go test -v -run TestLoad).
//
// PITH_LOAD_STORE=postgres runs it on a PostgreSQL store (internal/pgtest)
// through PITH_LOAD_HOSTS in-process hosts (default 1), session i on host
// i mod hosts: the figures of several hosts sharing one database.
//
// PITH_LOAD_PROFILE=PREFIX writes a CPU profile of the first and of the
// last whole window (PREFIX-first.pprof, PREFIX-last.pprof) and a heap
// profile at the end of each (PREFIX-first.heap.pprof,
// PREFIX-last.heap.pprof): what grows as the sessions do shows in `go
// tool pprof -diff_base`, the memory kept in -sample_index=inuse_space.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("runtime/pprof.readProfile"))
	n := envInt(t, "PITH_LOAD_SESSIONS", 20)
	dur := 8 * time.Second
	if v := os.Getenv("PITH_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PITH_LOAD_DURATION: %v", err)
		}
		dur = d
	}
	root := t.TempDir()
	ctx := context.Background()
	// Every agent here is the one anonymous caller: the bound on its
	// calls in flight and its share of the open sessions must not be
	// what the figures measure.
	loadConfig := func() *config.Config {
		c := testConfig(root)
		c.Server.MaxCallsInFlight = max(c.Server.MaxCallsInFlight, 4*n)
		c.Server.MaxOpenSessionsPerCaller = max(c.Server.MaxOpenSessionsPerCaller, n)
		return c
	}
	var hosts []*harness
	readBack := func(path string) (*session.File, error) { return session.Load(filepath.Join(root, path)) }
	switch os.Getenv("PITH_LOAD_STORE") {
	case "", "files":
		hosts = []*harness{startServer(t, loadConfig())}
	case "postgres":
		url := pgtest.NewDatabase(t)
		for range envInt(t, "PITH_LOAD_HOSTS", 1) {
			hosts = append(hosts, startStoreHost(t, loadConfig(), url))
		}
		st, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		readBack = func(path string) (*session.File, error) { return st.Load(ctx, path) }
	default:
		t.Fatalf("PITH_LOAD_STORE: files or postgres, not %q", os.Getenv("PITH_LOAD_STORE"))
	}

	type result struct {
		path              string
		tags              []string
		appendLat, ctxLat []time.Duration
		compactions       int
		err               error
	}
	results := make([]result, n)
	began := time.Now()
	deadline := began.Add(dur)
	// Messages by the 10-second window their turn ended in: whether the
	// rate holds as the sessions grow, not only its mean.
	windows := make([]atomic.Int64, int(dur/loadWindow)+2)
	cpu := sampleCPU(began, int(dur/loadWindow))
	stopProfiles := profileWindows(t, os.Getenv("PITH_LOAD_PROFILE"), began, int(dur/loadWindow))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.path = fmt.Sprintf("load/s%03d.jsonl", i)
			s, err := hosts[i%len(hosts)].client.Create(ctx, r.path, "/w")
			if err != nil {
				r.err = err
				return
			}
			for turn := 0; time.Now().Before(deadline); turn++ {
				tag := fmt.Sprintf("s%03d-t%05d", i, turn)
				start := time.Now()
				if _, err := s.AppendMessages(ctx, userMsg(tag+"-u", 100)); err != nil {
					r.err = err
					return
				}
				r.appendLat = append(r.appendLat, time.Since(start))
				out, err := s.AfterTurn(ctx, assistantMsg(tag+"-a", 100))
				if err != nil {
					r.err = err
					return
				}
				if out.Err != "" {
					r.err = fmt.Errorf("turn %s: %s", tag, out.Err)
					return
				}
				if out.Compaction != nil {
					r.compactions++
				}
				r.tags = append(r.tags, tag+"-u", tag+"-a")
				windows[min(int(time.Since(began)/loadWindow), len(windows)-1)].Add(2)
				start = time.Now()
				if _, err := s.Context(ctx); err != nil {
					r.err = err
					return
				}
				r.ctxLat = append(r.ctxLat, time.Since(start))
				if turn%25 == 24 {
					if _, err := s.Compact(ctx, "", nil); err != nil {
						r.err = fmt.Errorf("compact: %w", err)
						return
					}
					r.compactions++
				}
			}
			// One more compaction per session, so that even a short run
			// compacts; too short a session has nothing to compact.
			if _, err := s.Compact(ctx, "", nil); err == nil {
				r.compactions++
			} else if !errors.Is(err, client.ErrFailedPrecondition) {
				r.err = fmt.Errorf("final compact: %w", err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(deadline.Add(-dur))
	use := cpu()
	stopProfiles()
	for _, h := range hosts {
		h.stop()
	}

	var appendLat, ctxLat []time.Duration
	total, compactions := 0, 0
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", r.path, r.err)
		}
		appendLat = append(appendLat, r.appendLat...)
		ctxLat = append(ctxLat, r.ctxLat...)
		compactions += r.compactions
		f, err := readBack(r.path)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Warnings) > 0 || f.TornTail {
			t.Fatalf("%s: warnings %v, torn tail %v", r.path, f.Warnings, f.TornTail)
		}
		seen := map[string]int{}
		for _, e := range f.Entries {
			if e.Type == session.TypeMessage {
				text := e.Get("message.content.0.text").Str
				if i := indexSpace(text); i > 0 {
					seen[text[:i]]++
				}
			}
		}
		for _, tag := range r.tags {
			if seen[tag] != 1 {
				t.Fatalf("%s: message %s found %d times", r.path, tag, seen[tag])
			}
		}
		total += len(r.tags)
	}
	if compactions == 0 {
		t.Error("the load never compacted")
	}
	t.Logf("%s store, %d host(s), %d sessions × %s: %d messages (%.0f appends/s), %d compactions; Append p50 %s p99 %s (%d calls); GetContext p50 %s p99 %s (%d calls)",
		firstNonEmpty(os.Getenv("PITH_LOAD_STORE"), "files"), len(hosts), n, dur, total, float64(total)/elapsed.Seconds(), compactions,
		pct(appendLat, 50), pct(appendLat, 99), len(appendLat), pct(ctxLat, 50), pct(ctxLat, 99), len(ctxLat))
	t.Logf("appends/s by %s window: %s", loadWindow, windowRates(windows, int(dur/loadWindow)))
	t.Logf("this process's CPU per message by %s window (clients and hosts, not the database; the collector's share; bytes allocated): %s", loadWindow, windowCPU(use, windows))
}

// sampleCPU reads the process's CPU time (the Go runtime's account of
// it: the clients and the hosts, not a database server), the part of it
// the garbage collector took, and the bytes allocated, at began and at
// the end of each of the first whole windows; the returned func stops it
// and gives what each window sampled used. A rate that falls while the
// CPU per message holds is the machine (other work on it), not the code;
// allocations per message that grow with the sessions are work that does.
func sampleCPU(began time.Time, whole int) func() []runtimeUse {
	done := make(chan struct{})
	var out []runtimeUse
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		prev := readUse()
		for i := 1; i <= whole; i++ {
			select {
			case <-time.After(time.Until(began.Add(time.Duration(i) * loadWindow))):
			case <-done:
				return
			}
			now := readUse()
			out = append(out, runtimeUse{cpu: now.cpu - prev.cpu, gc: now.gc - prev.gc, alloc: now.alloc - prev.alloc})
			prev = now
		}
	}()
	return func() []runtimeUse {
		close(done)
		wg.Wait()
		return out
	}
}

// profileWindows profiles the CPU of the first and the last of the
// whole windows into prefix-first.pprof and prefix-last.pprof, and
// writes the heap at the end of each into prefix-first.heap.pprof and
// prefix-last.heap.pprof (nothing when prefix is empty); the returned
// func stops it.
func profileWindows(t *testing.T, prefix string, began time.Time, whole int) func() {
	if prefix == "" || whole < 1 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, w := range []struct {
			name  string
			index int
		}{{"first", 0}, {"last", whole - 1}} {
			select {
			case <-time.After(time.Until(began.Add(time.Duration(w.index) * loadWindow))):
			case <-done:
				return
			}
			f, err := os.Create(prefix + "-" + w.name + ".pprof")
			if err != nil {
				t.Errorf("profile: %v", err)
				return
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				f.Close()
				t.Errorf("profile: %v", err)
				return
			}
			select {
			case <-time.After(time.Until(began.Add(time.Duration(w.index+1) * loadWindow))):
			case <-done:
			}
			pprof.StopCPUProfile()
			f.Close()
			if err := writeHeap(prefix + "-" + w.name + ".heap.pprof"); err != nil {
				t.Errorf("heap profile: %v", err)
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// writeHeap writes the heap profile as of a collection made now: the
// memory still reachable at this point of the run, not as of whichever
// cycle last ran. One forced collection per window profiled is nothing
// next to the run's own.
func writeHeap(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runtimeUse is what the Go runtime says the process used: CPU seconds
// of its goroutines and its garbage collector (its time not idle, which
// counts a P held in a short syscall as busy, so it reads higher than the
// kernel's account; compare windows, not figures), the collector's part
// of them, and the bytes allocated on the heap.
type runtimeUse struct {
	cpu, gc float64
	alloc   uint64
}

func readUse() runtimeUse {
	s := []runtimemetrics.Sample{
		{Name: "/cpu/classes/total:cpu-seconds"},
		{Name: "/cpu/classes/idle:cpu-seconds"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/gc/heap/allocs:bytes"},
	}
	runtimemetrics.Read(s)
	return runtimeUse{cpu: s[0].Value.Float64() - s[1].Value.Float64(), gc: s[2].Value.Float64(), alloc: s[3].Value.Uint64()}
}

// windowCPU is each sampled window's CPU per message in microseconds,
// the collector's share of it, and the bytes allocated per message.
func windowCPU(use []runtimeUse, windows []atomic.Int64) string {
	var out []string
	for i, u := range use {
		if n := windows[i].Load(); n > 0 {
			out = append(out, fmt.Sprintf("%.0fµs (GC %.0f%%, %.0f kB)", u.cpu/float64(n)*1e6, 100*u.gc/u.cpu, float64(u.alloc)/float64(n)/1e3))
		}
	}
	return strings.Join(out, " ")
}

// loadWindow is the span of each rate TestLoad reports along the run.
const loadWindow = 10 * time.Second

// windowRates is the rate of each whole window of the run, first to last.
func windowRates(windows []atomic.Int64, whole int) string {
	var out []string
	for i := range min(whole, len(windows)) {
		out = append(out, fmt.Sprintf("%.0f", float64(windows[i].Load())/loadWindow.Seconds()))
	}
	return strings.Join(out, " ")
}

func indexSpace(s string) int {
	for i := range len(s) {
		if s[i] == ' ' {
			return i
		}
	}
	return -1
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)-1)*p/100].Round(time.Microsecond)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s: want a positive number, got %q", name, v)
	}
	return n
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
