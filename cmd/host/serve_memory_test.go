package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
)

// TestServeGetContextMemory (PITH_HEAVY=1) measures what concurrent
// GetContext calls of a large session cost a real pith serve process:
// its peak resident memory while PITH_MEM_CALLS calls (default 6) of a
// PITH_MEM_MB session (default 30) run at once, over its resident memory
// before them. It asserts nothing (memory of a process is not exact);
// it reports the figure.
func TestServeGetContextMemory(t *testing.T) {
	if os.Getenv("PITH_HEAVY") != "1" {
		t.Skip("set PITH_HEAVY=1 to measure")
	}
	mb, calls := envNum(t, "PITH_MEM_MB", 30), envNum(t, "PITH_MEM_CALLS", 6)
	dir := t.TempDir()
	cfgPath := dir + "/pith.json"
	writeServeConfig(t, cfgPath, 1200, nil)
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s, err := c.Create(ctx, "big.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("word ", 2000)
	batch := make([]json.RawMessage, 100)
	for i := 0; i < mb*1000/10/len(batch); i++ {
		for j := range batch {
			batch[j] = json.RawMessage(fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"%d %s"}],"timestamp":%d}`, i*len(batch)+j, text, time.Now().UnixMilli()))
		}
		if _, err := s.AppendMessages(ctx, batch...); err != nil {
			t.Fatal(err)
		}
	}
	// A second daemon on the same root, its memory fresh: the session
	// opened and read once.
	p = startServe(t, cfgPath)
	c2, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if s, err = c2.Open(ctx, "big.jsonl"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Context(ctx); err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	// Peak resident memory from here on.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak: %v", err)
	}
	before := procKB(t, pid, "VmRSS")
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if _, err := s.Context(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	peak := procKB(t, pid, "VmHWM")
	t.Logf("%d concurrent GetContext of a %d MB session: pith serve's resident memory %d MB before, peak %d MB: %.1f MB per call",
		calls, mb, before>>10, peak>>10, float64(peak-before)/1024/float64(calls))
}

func envNum(t *testing.T, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	return def
}

// procKB is a "kB" line of /proc/pid/status.
func procKB(t *testing.T, pid int, key string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}
