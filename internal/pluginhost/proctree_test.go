//go:build linux

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

	"github.com/pith-dev/pith/internal/pluginhost"
	"golang.org/x/sys/unix"
)

// survivorBound is the promise: nothing a plugin started outlives a
// SIGKILLed host by more than this.
const survivorBound = 5 * time.Second

// readPids waits for the plugin to write the pids of its children.
func readPids(t *testing.T, file string) []int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if err == nil {
			var pids []int
			for _, f := range strings.Fields(string(b)) {
				p, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("pid file: %q", b)
				}
				pids = append(pids, p)
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin wrote no pid file: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killAll is the test's own cleanup, should the code under test fail.
func killAll(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

func assertAllGoneWithin(t *testing.T, bound time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for _, pid := range pids {
		for !processGone(pid) {
			if time.Now().After(deadline) {
				st, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
				t.Fatalf("process %d still runs %s after the host was killed: %s (all %v)", pid, bound, st, pids)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestHostSIGKILLLeavesNoPluginChild(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	cmd, pid := startHelperHost(t, "-spawn "+file)
	children := readPids(t, file)
	t.Cleanup(func() { killAll(children) })
	if len(children) != 2 {
		t.Fatalf("children %v", children)
	}
	sid, err := unix.Getsid(children[1])
	if err != nil || sid != children[1] {
		t.Fatalf("second child should lead its own session: sid %d, %v", sid, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	assertAllGoneWithin(t, survivorBound, append([]int{pid}, children...)...)
}

func TestStopKillsThePluginsProcessTree(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	sp := spec("spawner", 1, "-compact", "record", "-spawn", file)
	sup := pluginhost.NewSupervisor(sp, pluginhost.Options{})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := sup.Pid()
	children := readPids(t, file)
	t.Cleanup(func() { killAll(children) })
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Fatalf("plugin %d is in group %d, want its own", pid, pgid)
	}
	sup.Stop(context.Background())
	assertAllGoneWithin(t, survivorBound, append([]int{pid}, children...)...)
}

// TestCrashKillsThePluginsGroup: a plugin that starts children and then
// crashes leaves none of its process group behind when the supervisor
// restarts it. (A child in a session of its own has left the group; only
// the plugin itself could have ended it, and a crash gives it no chance.)
func TestCrashKillsThePluginsGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	sp := spec("crasher", 1, "-before-compact", "exit", "-spawn", file)
	sup := pluginhost.NewSupervisor(sp, pluginhost.Options{MinBackoff: time.Hour})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Stop(context.Background()) })
	children := readPids(t, file)
	t.Cleanup(func() { killAll(children) })
	_, _ = sup.BeforeCompact(context.Background(), preparedEvent())
	assertAllGoneWithin(t, survivorBound, children[0])
}

// TestHostSIGKILLLeavesNoSocketDir: the private directory the host made for
// a plugin's sockets is removed by the plugin once its host is gone — the
// host, SIGKILLed, cannot — so a crash leaves nothing in the temporary
// directory.
func TestHostSIGKILLLeavesNoSocketDir(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "env")
	cmd, pid := startHelperHost(t, "-dump-env "+envFile)
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "PLUGIN_UNIX_SOCKET_DIR="); ok {
			dir = v
		}
	}
	if dir == "" {
		t.Fatalf("the plugin got no PLUGIN_UNIX_SOCKET_DIR:\n%q", env)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("socket directory while the plugin runs: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	assertAllGoneWithin(t, survivorBound, pid)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("socket directory %s left after the host was SIGKILLed (%v): %v", dir, err, entries)
	}
}

// TestStopEndsAHelperHoldingThePluginsOutput: a helper in a session of its
// own that keeps the plugin's stdout and stderr open (what a daemonising
// child that does not redirect its output does) would keep go-plugin from
// ever reaping the plugin; both ways of stopping end it first and return.
func TestStopEndsAHelperHoldingThePluginsOutput(t *testing.T) {
	for _, now := range []bool{false, true} {
		file := filepath.Join(t.TempDir(), "pid")
		sup := pluginhost.NewSupervisor(spec("holder", 1, "-compact", "record", "-spawn-stdout-holder", file), pluginhost.Options{})
		if err := sup.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		pid := sup.Pid()
		children := readPids(t, file)
		t.Cleanup(func() { killAll(children) })
		stopped := make(chan struct{})
		go func() {
			if now {
				sup.StopNow(context.Background())
			} else {
				sup.Stop(context.Background())
			}
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(time.Minute): // a safety net, not a measurement
			killAll(children)
			t.Fatalf("StopNow=%v did not return while the helper held the plugin's output", now)
		}
		assertAllGoneWithin(t, survivorBound, append([]int{pid}, children...)...)
	}
}

// TestCrashIsNoticedWhileAHelperHoldsThePluginsOutput: a plugin that exits
// by itself while a process it started keeps its stdout and stderr open is
// still seen to have exited, and restarted: go-plugin learns of the exit
// only once it has read both to their end, which the helper would put off
// for as long as it lives.
func TestCrashIsNoticedWhileAHelperHoldsThePluginsOutput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pid")
	// No health checks: two missed pings would report the crash too, late.
	sup := pluginhost.NewSupervisor(spec("held", 1, "-before-compact", "exit", "-spawn-stdout-holder", file), pluginhost.Options{MinBackoff: 1, HealthInterval: -1})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.StopNow(context.Background()) })
	children := readPids(t, file)
	t.Cleanup(func() { killAll(children) })
	_, _ = sup.BeforeCompact(context.Background(), preparedEvent())       // the plugin exits
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not a measurement
	defer cancel()
	for {
		if n, _ := sup.Crashes(); n > 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the plugin's exit went unnoticed while its helper held its output")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sup.WaitRunning(ctx); err != nil {
		t.Fatalf("not restarted: %v", err)
	}
}
