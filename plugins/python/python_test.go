package pythonplugin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/testtmp"
	"github.com/pith-dev/pith/internal/wire"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// requirePython finds a python3 that imports grpc and cryptography and
// generates the stubs with gen.sh; it skips, saying which Debian packages
// are missing, when that cannot be done (.ci/run installs them).
func requirePython(t *testing.T) (python, stubs string) {
	t.Helper()
	const pkgs = "python3-grpcio python3-protobuf python3-cryptography protobuf-compiler protobuf-compiler-grpc"
	for _, cand := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(cand)
		if err != nil {
			continue
		}
		if exec.Command(p, "-c", "import grpc, google.protobuf, cryptography").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Skipf("SKIP: no python3 with grpc, protobuf and cryptography; install the Debian packages %s", pkgs)
	}
	for _, tool := range []string{"protoc", "grpc_python_plugin"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIP: %s is missing; install the Debian packages %s", tool, pkgs)
		}
	}
	stubs = t.TempDir()
	if out, err := exec.Command("./gen.sh", stubs).CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, out)
	}
	return python, stubs
}

// TestThroughPluginHost starts plugin.py the way the host starts any
// plugin — go-plugin handshake with AutoMTLS, minimal environment, through
// the host's supervisor (sdktest.Subprocess) — and checks its answers to
// both events it handles, then that stopping it ends the process.
func TestThroughPluginHost(t *testing.T) {
	python, stubs := requirePython(t)
	script, err := filepath.Abs("plugin.py")
	if err != nil {
		t.Fatal(err)
	}
	h := sdktest.Subprocess(t, python, sdktest.WithArgs(script), sdktest.WithEnv(map[string]string{"PITH_PYTHON_STUBS": stubs}),
		sdktest.WithInfo(hooks.PluginInfo{Name: "python", Timeout: 10 * time.Second, Failure: hooks.FailureClosed}))
	sup := h.Process
	desc := sup.Description()
	if desc.Name != "python-example" || desc.Version != "1.0.0" ||
		!slices.Equal(desc.Events, []hooks.EventID{hooks.EventBeforeCompact, hooks.EventCompacting}) {
		t.Fatalf("Describe: %+v", desc)
	}
	if h.Plugin.Implements(hooks.EventTree) {
		t.Fatal("the host must not send events the plugin does not list")
	}
	ctx := context.Background()
	out, err := h.Dispatcher.Compacting(ctx, &hooks.CompactingEvent{
		SessionID: "s1",
		Messages:  []json.RawMessage{json.RawMessage(`{"role":"user","content":"a"}`), json.RawMessage(`{"role":"user","content":"b"}`)},
		Reason:    hooks.ReasonThreshold, FirstKeptEntryID: "e7",
		ReadFiles: []string{"a.go"}, ModifiedFiles: []string{"b.go", "c.go"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"python plugin was here: 2 messages, read a.go, modified b.go,c.go, keeping from e7"}; !slices.Equal(out.Context, want) {
		t.Fatalf("context %q, want %q", out.Context, want)
	}
	res, err := h.BeforeCompact(ctx, &hooks.BeforeCompactEvent{SessionID: "s1", Labels: []hooks.Label{{EntryID: "e1", Label: "no-compact"}}})
	if err != nil || res == nil || !res.Cancel || !strings.Contains(res.CancelReason, "no-compact") {
		t.Fatalf("BeforeCompact = %+v, %v; want a cancel", res, err)
	}
	if res, err := h.BeforeCompact(ctx, &hooks.BeforeCompactEvent{SessionID: "s1"}); err != nil || (res != nil && (res.Cancel || res.Compaction != nil)) {
		t.Fatalf("BeforeCompact without the label = %+v, %v; want no opinion", res, err)
	}
	if err := sup.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	pid := sup.Pid()
	sup.Stop(ctx)
	if pid > 0 && syscall.Kill(pid, 0) == nil {
		t.Fatalf("plugin process %d still running after Stop", pid)
	}
}

func TestRefusesToRunByHand(t *testing.T) {
	python, stubs := requirePython(t)
	cmd := exec.Command(python, "plugin.py")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PITH_PYTHON_STUBS=" + stubs}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "Pith plugin") {
		t.Fatalf("run by hand: %v, %q; want exit 1 with an explanation", err, out)
	}
}

// TestExitsWhenHostDies: plugin.py whose host is gone exits by itself and
// removes the socket directory the dead host can no longer remove.
func TestExitsWhenHostDies(t *testing.T) {
	python, stubs := requirePython(t)
	host := exec.Command("sleep", "60") // stands in for the host process
	if err := host.Start(); err != nil {
		t.Skipf("no sleep command: %v", err)
	}
	sockets, err := os.MkdirTemp(testtmp.Short(t), "plugin-dir") // as go-plugin names it; short: a socket path must fit in 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "plugin.py")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "PITH_PYTHON_STUBS=" + stubs,
		wire.Handshake.MagicCookieKey + "=" + wire.Handshake.MagicCookieValue, "PLUGIN_PROTOCOL_VERSIONS=1",
		"PLUGIN_UNIX_SOCKET_DIR=" + sockets, wire.EnvHostPID + "=" + strconv.Itoa(host.Process.Pid),
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("no handshake line: %v", err)
	}
	_ = host.Process.Kill()
	_ = host.Wait()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("plugin exited with %v, want status 0", err)
		}
	case <-time.After(30 * time.Second): // a safety net, not a measurement
		_ = cmd.Process.Kill()
		<-exited
		t.Fatal("plugin still running 30 s after its host died")
	}
	if _, err := os.Stat(sockets); !os.IsNotExist(err) {
		t.Fatalf("socket directory %s left after the host died: %v", sockets, err)
	}
}
