package gcstart

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the current GOGC setting.
func gcPercent() int {
	old := debug.SetGCPercent(100)
	debug.SetGCPercent(old)
	return old
}

const startingHeap = 64 << 20

// TestDefer: nothing is collected before the given heap is allocated;
// the first collection then restores the usual pacing.
func TestDefer(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	t.Cleanup(func() {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
	// The memory limit counts what the runtime holds, freed or not: start
	// from a heap given back to the system, as a new process's is.
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	start := ms.NumGC

	Defer(startingHeap)
	var keep [][]byte
	for range 16 { // 16 MB: a command on a small session
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.ReadMemStats(&ms)
	if ms.NumGC != start {
		t.Fatalf("%d collections within 16 MB, want none", ms.NumGC-start)
	}
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC is %d before the first collection, want off", p)
	}
	for range 96 { // past startingHeap
		keep = append(keep, make([]byte, 1<<20))
	}
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is still %d after the first collection, want 100", gcPercent())
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.ReadMemStats(&ms)
	if ms.NumGC == start {
		t.Fatal("no collection past startingHeap")
	}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		t.Errorf("memory limit %d left after the first collection", limit)
	}
	runtime.KeepAlive(keep)
}

// TestDeferRespectsUser: GOGC or GOMEMLIMIT set by the
// user leave the collector as they are.
func TestDeferRespectsUser(t *testing.T) {
	t.Setenv("GOGC", "200")
	t.Cleanup(func() { debug.SetGCPercent(100) })
	debug.SetGCPercent(200)
	Defer(startingHeap)
	if p := gcPercent(); p != 200 {
		t.Fatalf("GOGC = %d, want the user's 200", p)
	}
}

// TestDeferRespectsProgram: a GOGC or memory limit the program set itself
// (a plugin's main, before sdk.Serve) stays.
func TestDeferRespectsProgram(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	t.Cleanup(func() {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
	debug.SetGCPercent(50)
	Defer(startingHeap)
	if p := gcPercent(); p != 50 {
		t.Fatalf("GOGC = %d, want the program's 50", p)
	}
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(1 << 30)
	Defer(startingHeap)
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 100 || l != 1<<30 {
		t.Fatalf("GOGC %d, limit %d; want 100 and the program's 1 GiB", p, l)
	}
}
