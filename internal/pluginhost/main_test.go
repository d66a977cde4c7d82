package pluginhost_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/testtmp"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// scripted is the test plugin binary, built once per test binary run.
var scripted string

const (
	helperEnv     = "PITH_PLUGINHOST_TEST_HELPER"
	helperArgsEnv = "PITH_PLUGINHOST_TEST_HELPER_ARGS" // extra plugin flags, space-separated
)

func TestMain(m *testing.M) {
	if os.Getenv(floodHelperEnv) != "" {
		floodHost()
		return
	}
	if os.Getenv(helperEnv) != "" {
		helperHost()
		return
	}
	dir, err := os.MkdirTemp("", "pluginhost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scripted, err = sdktest.BuildTo(dir, "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// helperHost is a host process the test SIGKILLs: it starts the plugin,
// prints its pid and waits to die.
func helperHost() {
	args := append([]string{"-compact", "record"}, strings.Fields(os.Getenv(helperArgsEnv))...)
	sup := pluginhost.NewSupervisor(pluginhost.Spec{Name: "orphan", Path: os.Getenv(helperEnv), Args: args}, pluginhost.Options{})
	if err := sup.Start(context.Background()); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(sup.Pid())
	select {}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func bufLogger() (hclog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Trace, DisableTime: true}), buf
}

// processGone reports whether pid no longer runs (a zombie awaiting a
// reaper counts as gone).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// waitGone polls for pid to vanish within a generous bound.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHostSIGKILLLeavesNoPlugin(t *testing.T) {
	cmd, pid := startHelperHost(t, "")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid)
}

// startHelperHost runs helperHost in a subprocess with the plugin flags in
// args and returns it with the plugin's pid once the plugin runs. The
// helper has a TMPDIR of its own: the tests SIGKILL it, which leaves
// go-plugin's socket directory (plugin-dir*) behind.
func startHelperHost(t *testing.T, args string) (*exec.Cmd, int) {
	t.Helper()
	tmp := testtmp.Short(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+scripted, helperArgsEnv+"="+args, "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		_ = cmd.Process.Kill()
		t.Fatalf("helper said %q", line)
	}
	if processGone(pid) {
		_ = cmd.Process.Kill()
		t.Fatal("plugin not running before the host is killed")
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, pid
}
