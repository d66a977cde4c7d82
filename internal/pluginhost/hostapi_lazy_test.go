package pluginhost_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// The host API is served on a listener whose address the plugin gets in
// Describe; the SDK connects on the first host call. These tests watch the
// host's side: the connections its listener accepted.

func hostWithSession() *sdktest.FakeHost {
	return &sdktest.FakeHost{
		Sessions: map[string][]json.RawMessage{"s1": {json.RawMessage(`{"type":"session","id":"s1"}`), json.RawMessage(`{"type":"message","id":"e1"}`)}},
		CompleteFunc: func(_ context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error) {
			return hooks.CompleteResponse{Text: "host says: " + req.Prompt, FinishReason: "stop"}, nil
		},
	}
}

const hostSummary = "host says: 2 entries, [7 7] tokens"

// callHost dispatches session_before_compact to a plugin that summarizes
// through the host API and checks the summary came from the host.
func callHost(t *testing.T, d *dispatch.Dispatcher) {
	t.Helper()
	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil {
		t.Fatal(err)
	}
	if out.Compaction == nil || out.Compaction.Summary != hostSummary {
		t.Fatalf("outcome = %+v (plugin %+v), want the summary made through the host", out.Compaction, out.Plugin)
	}
}

func wantConnections(t *testing.T, sup *pluginhost.Supervisor, want int64) {
	t.Helper()
	if got := pluginhost.HostAPIConnections(sup); got != want {
		t.Fatalf("plugin %q: the host API accepted %d connections, want %d", sup.Spec().Name, got, want)
	}
}

// TestHostAPIConnectsOnFirstCall: a plugin that never calls the host makes
// no connection to its API, not even when it handles events; one that does
// connects at its first call and keeps that one connection.
func TestHostAPIConnectsOnFirstCall(t *testing.T) {
	h, d := startAll(t, pluginhost.Options{Host: hostWithSession()}, nil,
		spec("caller", 1, "-before-compact", "host"), spec("quiet", 2, "-compact", "record"))
	caller, quiet := h.Supervisor("caller"), h.Supervisor("quiet")
	if a := pluginhost.HostAPIAddress(caller); !strings.HasPrefix(a, "unix:/") {
		t.Fatalf("host_api_address = %q, want a unix socket", a)
	}
	wantConnections(t, caller, 0)
	wantConnections(t, quiet, 0)

	if err := d.Compact(context.Background(), &hooks.CompactEvent{SessionID: "s1", CompactionEntry: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	wantConnections(t, quiet, 0)
	wantConnections(t, caller, 0)

	callHost(t, d)
	wantConnections(t, caller, 1)
	callHost(t, d)
	wantConnections(t, caller, 1)
	wantConnections(t, quiet, 0)
}

// TestHostAPIFirstCallAfterBrokerTimeout: the first host call comes more
// than 5 s after Describe — after go-plugin's broker has dropped the
// connection info a plugin would dial through it — and still succeeds: the
// address in Describe stays valid as long as the instance runs.
func TestHostAPIFirstCallAfterBrokerTimeout(t *testing.T) {
	h, d := startAll(t, pluginhost.Options{Host: hostWithSession()}, nil, spec("late", 1, "-before-compact", "host"))
	time.Sleep(6 * time.Second) // go-plugin's broker keeps connection info 5 s
	wantConnections(t, h.Supervisor("late"), 0)
	callHost(t, d)
	wantConnections(t, h.Supervisor("late"), 1)
}

// TestHostAPIConcurrentFirstCalls: calls that reach the host at once, with
// no connection yet, all succeed over one shared connection.
func TestHostAPIConcurrentFirstCalls(t *testing.T) {
	host := hostWithSession()
	h, d := startAll(t, pluginhost.Options{Host: host}, nil, spec("busy", 1, "-before-compact", "host"))
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
			if err == nil && (out.Compaction == nil || out.Compaction.Summary != hostSummary) {
				err = errors.New("no summary from the host")
			}
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := len(host.Calls()); got != 3*n {
		t.Fatalf("the host served %d calls, want %d", got, 3*n)
	}
	wantConnections(t, h.Supervisor("busy"), 1)
}

// TestHostAPIAfterRestart: a plugin killed and restarted gets a new host
// API listener and reaches the host through it; the old one is closed and
// its socket removed.
func TestHostAPIAfterRestart(t *testing.T) {
	seen := make(chan pluginhost.Observation, 16)
	h, d := startAll(t, pluginhost.Options{Host: hostWithSession(), Logger: hclog.NewNullLogger(), MinBackoff: 10 * time.Millisecond,
		Observe: func(o pluginhost.Observation) { seen <- o }}, nil, spec("phoenix", 1, "-before-compact", "host"))
	sup := h.Supervisor("phoenix")
	callHost(t, d)
	oldAddr, oldServed, oldPid := pluginhost.HostAPIAddress(sup), pluginhost.HostAPIServed(sup), sup.Pid()
	if err := syscall.Kill(oldPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for {
		if o := nextObservation(t, seen); o.Kind == pluginhost.ObservedRestart {
			break
		}
	}
	if sup.Pid() == oldPid {
		t.Fatal("the plugin was not restarted")
	}
	newAddr := pluginhost.HostAPIAddress(sup)
	if newAddr == "" || newAddr == oldAddr {
		t.Fatalf("host API address after restart %q, before %q", newAddr, oldAddr)
	}
	wantConnections(t, sup, 0)
	callHost(t, d)
	wantConnections(t, sup, 1)
	select {
	case <-oldServed:
	case <-time.After(15 * time.Second):
		t.Fatal("the killed instance's host API server still serves")
	}
	waitSocketGone(t, strings.TrimPrefix(oldAddr, "unix:"))
}

// TestHostAPIStoppedWithPlugin: stopping a plugin, or killing it, stops its
// host API server and removes the socket.
func TestHostAPIStoppedWithPlugin(t *testing.T) {
	for _, stop := range []struct {
		name string
		stop func(*pluginhost.Supervisor)
	}{
		{"Stop", func(s *pluginhost.Supervisor) { s.Stop(context.Background()) }},
		{"StopNow", func(s *pluginhost.Supervisor) { s.StopNow(context.Background()) }},
	} {
		t.Run(stop.name, func(t *testing.T) {
			sup := pluginhost.NewSupervisor(spec("brief", 1, "-before-compact", "host"), pluginhost.Options{Host: hostWithSession()})
			if err := sup.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			addr, served := pluginhost.HostAPIAddress(sup), pluginhost.HostAPIServed(sup)
			if _, err := os.Stat(strings.TrimPrefix(addr, "unix:")); err != nil {
				t.Fatalf("host API socket %q: %v", addr, err)
			}
			stop.stop(sup)
			select {
			case <-served:
			case <-time.After(15 * time.Second):
				t.Fatal("the host API server still serves after the plugin stopped")
			}
			waitSocketGone(t, strings.TrimPrefix(addr, "unix:"))
		})
	}
}

// TestHostAPIOlderHost: from a host that sends only go-plugin's broker id,
// as hosts did before host_api_address, a plugin of this SDK — which
// serves without go-plugin, so has no broker to dial through — still
// starts and answers, with no host API: it makes no connection, and what
// it asks the host fails (ErrNoHost) rather than hanging.
func TestHostAPIOlderHost(t *testing.T) {
	pluginhost.ActAsOlderHost(t)
	h, d := startAll(t, pluginhost.Options{Host: hostWithSession()}, nil, spec("old", 1, "-before-compact", "host"))
	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err == nil && out.Compaction != nil && out.Compaction.Summary == hostSummary {
		t.Fatal("the summary was made through a host API the plugin has no way to reach")
	}
	wantConnections(t, h.Supervisor("old"), 0)
}

// TestHostAPIAttachedPlugin: a plugin in debug mode, which speaks no TLS,
// reaches the host API the same lazy way, without TLS.
func TestHostAPIAttachedPlugin(t *testing.T) {
	_, rc := startDebugPlugin(t, "-name", "dbg", "-before-compact", "host")
	sp := pluginhost.Spec{Name: "dbg", Reattach: line(t, rc), Timeout: 10 * time.Second}
	h, d := startAll(t, pluginhost.Options{Host: hostWithSession()}, nil, sp)
	wantConnections(t, h.Supervisor("dbg"), 0)
	callHost(t, d)
	wantConnections(t, h.Supervisor("dbg"), 1)
}

func waitSocketGone(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("host API socket %s is still there", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
