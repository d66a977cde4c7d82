//go:build linux

package pluginhost_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/pluginhost"
)

const (
	floodHelperEnv = "PITH_PLUGINHOST_TEST_FLOOD" // the plugin binary
	floodMiB       = 300
)

// countingWriter counts the host log's lines and those reporting drops.
type countingWriter struct {
	mu             sync.Mutex
	lines, drops   int
	relayedBytes   int
	lastDropReport string
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines += bytes.Count(p, []byte{'\n'})
	c.relayedBytes += len(p)
	if bytes.Contains(p, []byte("over its limits was dropped")) {
		c.drops++
		c.lastDropReport = strings.TrimSpace(string(p))
	}
	return len(p), nil
}

// floodHost is a host process whose plugin writes floodMiB of stderr; once
// the flood is through it prints its peak RSS and what its log received.
func floodHost() {
	dir, _ := os.MkdirTemp("", "flood-")
	defer os.RemoveAll(dir)
	done := filepath.Join(dir, "done")
	out := &countingWriter{}
	log := hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Trace})
	sp := pluginhost.Spec{Name: "flood", Path: os.Getenv(floodHelperEnv), Args: []string{"-compact", "record", "-flood-stderr", strconv.Itoa(floodMiB), "-flood-done", done}}
	sup := pluginhost.NewSupervisor(sp, pluginhost.Options{Logger: log})
	if err := sup.Start(context.Background()); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	for {
		if _, err := os.Stat(done); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	sup.Stop(context.Background())
	status, _ := os.ReadFile("/proc/self/status")
	hwm := ""
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			hwm = strings.Fields(l)[1]
		}
	}
	out.mu.Lock()
	fmt.Printf("%s %d %d %d\n", hwm, out.lines, out.drops, out.relayedBytes)
	fmt.Println(out.lastDropReport)
	out.mu.Unlock()
}

// TestStderrFloodKeepsHostMemoryBounded: a real plugin writes 300 MiB to
// stderr. The host relays a bounded share, reports the drops, and its peak
// RSS stays far below the flood (before the limits the host grew past it).
func TestStderrFloodKeepsHostMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 300 MiB through a pipe")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodHelperEnv+"="+scripted)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("flood host: %v\n%s", err, out)
	}
	first, report, _ := strings.Cut(string(out), "\n")
	var hwmKiB, lines, drops, relayed int
	if _, err := fmt.Sscan(first, &hwmKiB, &lines, &drops, &relayed); err != nil {
		t.Fatalf("flood host said %q: %v", out, err)
	}
	t.Logf("host peak RSS %d MiB; %d log lines (%d KiB) relayed of a %d MiB flood; %d drop reports, last: %s",
		hwmKiB>>10, lines, relayed>>10, floodMiB, drops, strings.TrimSpace(report))
	if hwmKiB > 150<<10 {
		t.Errorf("host peak RSS %d MiB for a %d MiB flood", hwmKiB>>10, floodMiB)
	}
	if drops == 0 || relayed > floodMiB<<20/4 {
		t.Errorf("the flood was not capped: %d drop reports, %d bytes relayed", drops, relayed)
	}
}
