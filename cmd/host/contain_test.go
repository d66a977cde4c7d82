//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/sdk/sdktest"
)

// TestDoubleForkedPluginProcessDoesNotOutliveTheCommand: a plugin that
// daemonises a process — a double fork into a session of its own, whose
// parent exits at once, so that neither the plugin's process group nor a
// walk of its descendants finds it — leaves nothing running once `pith
// compact` (a real pith process, set up as main sets it up) has exited.
//
// With -orphan-keeps-output the process also keeps the plugin's stdout and
// stderr open, as a daemon that does not redirect them does: go-plugin
// reads them to their end before it reaps the plugin, so the command must
// not wait for that end once the plugin itself is dead.
func TestDoubleForkedPluginProcessDoesNotOutliveTheCommand(t *testing.T) {
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		t.Fatal(err)
	}
	for _, keepsOutput := range []bool{false, true} {
		t.Run(fmt.Sprintf("keeps-output=%v", keepsOutput), func(t *testing.T) {
			args := []string{"-spawn-orphan"}
			if keepsOutput {
				args = []string{"-orphan-keeps-output", "-spawn-orphan"}
			}
			daemonisedPluginEnds(t, bin, args, keepsOutput)
		})
	}
	// A child in a session of its own whose parent, the plugin, lives
	// until it is killed: pith walks no descendants (it is a subreaper),
	// so the child is re-parented to it when the plugin dies, and ended.
	t.Run("setsid-child-keeps-output", func(t *testing.T) {
		daemonisedPluginEnds(t, bin, []string{"-spawn-stdout-holder"}, true)
	})
}

// daemonisedPluginEnds runs pith compact with a plugin given args, the last
// of which takes the file the plugin writes its helper's pid to.
func daemonisedPluginEnds(t *testing.T, bin string, flags []string, keepsOutput bool) {
	pidFile := filepath.Join(t.TempDir(), "orphan")
	args := append([]string{"-name", "daemoniser", "-before-compact", "none"}, append(flags, pidFile)...)
	cfg := writeConfig(t, map[string]any{"name": "daemoniser", "path": bin, "priority": 10, "events": []string{"session_before_compact"}, "args": args})
	path := copyFile(t, "../../examples/demo-session.jsonl")
	cmd := cliChild("compact", "--config", cfg, "--keep-recent-tokens", "8000", path)
	// A safety net, not a measurement: a command that waits for the
	// orphan's output to end would wait for its 600 s sleep.
	timer := time.AfterFunc(time.Minute, func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	out, err := cmd.CombinedOutput()
	if !timer.Stop() {
		t.Fatalf("compact did not return within a minute while the plugin's orphan held its output:\n%s", out)
	}
	if err != nil {
		t.Fatalf("compact: %v\n%s", err, out)
	}
	if said := strings.Contains(string(out), "still holds its output"); said != keepsOutput {
		t.Errorf("warning about the held output printed: %v, want %v:\n%s", said, keepsOutput, out)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the plugin wrote no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file %q", b)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	// The command waited for the orphan's death before it exited; the
	// bound only keeps a regression from hanging the test.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil && !isZombie(pid) {
		if time.Now().After(deadline) {
			st, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
			t.Fatalf("the plugin's double-forked process %d outlived the command: %s", pid, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isZombie reports whether pid has exited and waits for its parent.
func isZombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
