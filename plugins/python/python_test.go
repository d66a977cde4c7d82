package pythonplugin_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/hooks/pluginhost"
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

func testLogger(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: tWriter{t}, Level: hclog.Debug, DisableTime: true})
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestThroughPluginHost starts plugin.py the way the host starts any
// plugin — go-plugin handshake with AutoMTLS, minimal environment — and
// checks its answers to both events it handles arrive through the
// Dispatcher, then that StopAll ends it.
func TestThroughPluginHost(t *testing.T) {
	python, stubs := requirePython(t)
	script, err := filepath.Abs("plugin.py")
	if err != nil {
		t.Fatal(err)
	}
	log := testLogger(t)
	host := pluginhost.NewHost(pluginhost.Options{Logger: log, StartTimeout: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plugins, retire, err := host.Apply(ctx, []pluginhost.Spec{{
		Name: "python", Path: python, Args: []string{script}, Env: map[string]string{"PITH_PYTHON_STUBS": stubs},
		Timeout: 10 * time.Second, Failure: hooks.FailureClosed,
	}})
	retire(ctx)
	stopped := false
	defer func() {
		if !stopped {
			host.StopAll(context.Background())
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	sup := host.Supervisor("python")
	desc := sup.Description()
	if desc.Name != "python-example" || desc.Version != "1.0.0" ||
		!slices.Equal(desc.Events, []hooks.EventID{hooks.EventBeforeCompact, hooks.EventCompacting}) {
		t.Fatalf("Describe: %+v", desc)
	}
	if sup.Implements(hooks.EventTree) {
		t.Fatal("the host must not send events the plugin does not list")
	}
	d, err := hooks.NewDispatcher(hooks.Options{Logger: log}, plugins...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Compacting(ctx, &hooks.CompactingEvent{
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
	res, err := sup.BeforeCompact(ctx, &hooks.BeforeCompactEvent{SessionID: "s1", Labels: []hooks.Label{{EntryID: "e1", Label: "no-compact"}}})
	if err != nil || res == nil || !res.Cancel || !strings.Contains(res.CancelReason, "no-compact") {
		t.Fatalf("BeforeCompact = %+v, %v; want a cancel", res, err)
	}
	if res, err := sup.BeforeCompact(ctx, &hooks.BeforeCompactEvent{SessionID: "s1"}); err != nil || (res != nil && (res.Cancel || res.Compaction != nil)) {
		t.Fatalf("BeforeCompact without the label = %+v, %v; want no opinion", res, err)
	}
	if err := sup.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	pid := sup.Pid()
	host.StopAll(ctx)
	stopped = true
	if pid > 0 && syscall.Kill(pid, 0) == nil {
		t.Fatalf("plugin process %d still running after StopAll", pid)
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
