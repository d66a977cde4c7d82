package pluginhost_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/reattach"
	"github.com/pith-dev/pith/sdk"
)

// startDebugPlugin runs the scripted plugin in debug mode, as a developer
// would under a debugger, and returns the process and the configuration
// it printed.
func startDebugPlugin(t *testing.T, args ...string) (*exec.Cmd, reattach.Config) {
	t.Helper()
	cmd := exec.Command(scripted, args...)
	cmd.Env = append(os.Environ(), sdk.EnvDebug+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("debug plugin printed %q: %v", line, err)
	}
	rc, err := reattach.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, rc
}

// TestAttachToDebugPlugin: the host attaches to a plugin running in debug
// mode instead of starting one, warns that it does, and calls it; on stop
// it does not signal the process, which ends on its own.
func TestAttachToDebugPlugin(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record")
	cmd, rc := startDebugPlugin(t, "-name", "dbg", "-compact", "record", "-record", record)
	if rc.Pid != cmd.Process.Pid {
		t.Fatalf("printed pid %d, the process is %d", rc.Pid, cmd.Process.Pid)
	}
	log, logs := bufLogger()
	sp := pluginhost.Spec{Name: "dbg", Reattach: line(t, rc), SHA256: strings.Repeat("0", 64), Timeout: 10 * time.Second}
	// A short health interval: an attached plugin must not be pinged
	// (it may sit at a breakpoint), so it must not matter.
	sup := pluginhost.NewSupervisor(sp, pluginhost.Options{Logger: log, HealthInterval: 10 * time.Millisecond})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := sup.Description(); d.Name != "dbg" || !sup.Implements(hooks.EventCompact) {
		t.Fatalf("Describe: %+v", d)
	}
	if err := sup.Compact(context.Background(), &hooks.CompactEvent{SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(record); err != nil || !strings.Contains(string(b), "s1") {
		t.Fatalf("the attached plugin recorded %q, %v", b, err)
	}
	if !strings.Contains(logs.String(), "debug mode") || !strings.Contains(logs.String(), "sha256_ignored=true") {
		t.Fatalf("no warning about attaching:\n%s", logs)
	}
	if strings.Contains(logs.String(), "health check failed") {
		t.Fatalf("the attached plugin was health-checked:\n%s", logs)
	}
	sup.Stop(context.Background())
	// Debug mode ends once its client has closed; the exit is the
	// plugin's own, not a signal.
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); err != nil || !ok || ws.Signaled() {
		t.Fatalf("the debug plugin ended with %v (%v), want its own exit", cmd.ProcessState, err)
	}
}

// TestAttachedPluginGoneIsNotRestarted: when an attached plugin's process
// ends, the plugin is disabled, not restarted.
func TestAttachedPluginGoneIsNotRestarted(t *testing.T) {
	cmd, rc := startDebugPlugin(t, "-name", "dbg", "-compact", "record")
	var kinds []string
	var mu sync.Mutex
	sup := pluginhost.NewSupervisor(pluginhost.Spec{Name: "dbg", Reattach: line(t, rc)}, pluginhost.Options{
		HealthInterval: -1, MinBackoff: time.Millisecond,
		Observe: func(o pluginhost.Observation) { mu.Lock(); kinds = append(kinds, string(o.Kind)); mu.Unlock() },
	})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sup.Stop(context.Background())
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// Reaped, as the debugger or shell that started it would.
	_ = cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for sup.State() != pluginhost.StateDisabled {
		if time.Now().After(deadline) {
			t.Fatalf("after the attached process ended the plugin is %s, want disabled", sup.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(kinds, ",") != "crash,disabled" {
		t.Fatalf("observed %v, want crash then disabled and no restart", kinds)
	}
}

// TestAttachNothingThere: an address nobody serves on fails to start with
// an error naming it.
func TestAttachNothingThere(t *testing.T) {
	rc := reattach.Config{Protocol: "grpc", ProtocolVersion: 1, Pid: os.Getpid(), Test: true,
		Addr: reattach.Addr{Network: "unix", String: filepath.Join(t.TempDir(), "gone.sock")}}
	sup := pluginhost.NewSupervisor(pluginhost.Spec{Name: "gone", Reattach: line(t, rc)}, pluginhost.Options{StartTimeout: 5 * time.Second})
	err := sup.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "gone.sock") {
		t.Fatalf("Start = %v, want an error naming the socket", err)
	}
}

// line is rc as a plugin in debug mode prints it.
func line(t *testing.T, rc reattach.Config) string {
	t.Helper()
	l, err := rc.Line()
	if err != nil {
		t.Fatal(err)
	}
	return l
}
