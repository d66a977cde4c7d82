package nodeplugin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/testtmp"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
)

// requireNode skips the test unless node and the plugin's npm dependencies
// are available, installing the dependencies with `npm ci` when npm is.
func requireNode(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	// Every dependency present, or npm ci (a node_modules from before a
	// dependency was added lacks it).
	present := true
	for _, dep := range []string{"@grpc/grpc-js", "@grpc/proto-loader", "jsrsasign"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(dep), "package.json")); err != nil {
			present = false
		}
	}
	if present {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("node_modules is missing and npm is not installed (run npm ci in plugins/node)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm ci failed (offline?): %v\n%s", err, out)
	}
	return dir
}

func testLogger(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: newTWriter(t), Level: hclog.Debug, DisableTime: true})
}

// tWriter logs through t.Log until the test ends; lines from goroutines
// still winding down after that are dropped instead of panicking.
type tWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func newTWriter(t *testing.T) *tWriter {
	w := &tWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// TestThroughPluginHost starts the Node.js plugin the way the host starts
// any plugin — go-plugin handshake with AutoMTLS — and checks its answer
// arrives through the Dispatcher.
func TestThroughPluginHost(t *testing.T) {
	dir := requireNode(t)
	log := testLogger(t)
	host := pluginhost.NewHost(pluginhost.Options{Logger: log, StartTimeout: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plugins, retire, err := host.Apply(ctx, []pluginhost.Spec{{
		Name: "node", Path: filepath.Join(dir, "plugin.sh"), Timeout: 10 * time.Second, Failure: hooks.FailureClosed,
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
	sup := host.Supervisor("node")
	desc := sup.Description()
	if desc.Name != "node-example" || desc.Version != "1.0.0" || !slices.Equal(desc.Events, []hooks.EventID{hooks.EventCompacting}) {
		t.Fatalf("Describe: %+v", desc)
	}
	if sup.Implements(hooks.EventBeforeCompact) {
		t.Fatal("the host must not send events the plugin does not list")
	}

	d, err := dispatch.NewDispatcher(dispatch.Options{Logger: log}, plugins...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Compacting(ctx, &hooks.CompactingEvent{
		SessionID: "s1",
		Messages:  []json.RawMessage{json.RawMessage(`{"role":"user","content":"a"}`), json.RawMessage(`{"role":"assistant","content":[]}`), json.RawMessage(`{"role":"user","content":"b"}`)},
		Reason:    hooks.ReasonThreshold,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"node plugin was here: 3 messages"}; !slices.Equal(out.Context, want) {
		t.Fatalf("context %q, want %q", out.Context, want)
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

// TestHandshakeAndHealth runs the plugin by hand, without TLS: the
// handshake line has go-plugin's format and the gRPC health service that
// go-plugin pings answers SERVING.
func TestHandshakeAndHealth(t *testing.T) {
	dir := requireNode(t)
	cmd := exec.Command(filepath.Join(dir, "plugin.sh"))
	cmd.Env = append(os.Environ(),
		wire.Handshake.MagicCookieKey+"="+wire.Handshake.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=1",
		"PLUGIN_CLIENT_CERT=",
		wire.EnvHostPID+"="+strconv.Itoa(os.Getpid()),
		// As a host would: the socket's directory goes where the test
		// removes it, since the SIGKILL below leaves the plugin no
		// chance to.
		"PLUGIN_UNIX_SOCKET_DIR="+testtmp.Short(t),
	)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = newTWriter(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no handshake line: %v", err)
	}
	parts := strings.Split(strings.TrimSpace(line), "|")
	if len(parts) != 5 || parts[0] != "1" || parts[1] != "1" || parts[2] != "unix" || parts[4] != "grpc" {
		t.Fatalf("handshake line %q", line)
	}
	conn, err := grpc.NewClient("unix://"+parts[3], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "plugin"})
	if err != nil || resp.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("health check: %v, %v", resp, err)
	}
}

func TestRefusesToRunByHand(t *testing.T) {
	dir := requireNode(t)
	cmd := exec.Command(filepath.Join(dir, "plugin.sh"))
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, wire.Handshake.MagicCookieKey+"=") })
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "plugin for Pith") {
		t.Fatalf("run by hand: %v, %q; want exit 1 with an explanation", err, out)
	}
}

// TestExitsWhenHostDies: a plugin whose host is gone (SIGKILLed, say) exits
// by itself instead of lingering as an orphan, and removes the socket
// directory the dead host can no longer remove.
func TestExitsWhenHostDies(t *testing.T) {
	dir := requireNode(t)
	host := exec.Command("sleep", "60") // stands in for the host process
	if err := host.Start(); err != nil {
		t.Skipf("no sleep command: %v", err)
	}
	sockets, err := os.MkdirTemp(testtmp.Short(t), "plugin-dir") // as go-plugin names it; short: a socket path must fit in 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "plugin.sh"))
	cmd.Env = append(os.Environ(),
		wire.Handshake.MagicCookieKey+"="+wire.Handshake.MagicCookieValue,
		"PLUGIN_CLIENT_CERT=",
		"PLUGIN_UNIX_SOCKET_DIR="+sockets,
		wire.EnvHostPID+"="+strconv.Itoa(host.Process.Pid),
	)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = newTWriter(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
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
