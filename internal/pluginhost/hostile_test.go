package pluginhost_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// TestHostAPIRefusesDeepJSON: a real plugin subprocess asks the host's
// EstimateTokens about a message nested 30 million levels deep. The host
// answers InvalidArgument naming the limit, and then still answers the
// plugin's next call.
func TestHostAPIRefusesDeepJSON(t *testing.T) {
	log, _ := bufLogger()
	_, d := startAll(t, pluginhost.Options{Logger: log, Host: &engine.HostAPI{}}, nil, spec("deep", 1, "-before-compact", "host-deep"))
	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil {
		t.Fatal(err)
	}
	if out.Compaction == nil {
		t.Fatal("no compaction from the plugin")
	}
	s := out.Compaction.Summary
	if !strings.Contains(s, "code = InvalidArgument") || !strings.Contains(s, "nested deeper than 10000 levels") {
		t.Errorf("deep call: %q, want InvalidArgument naming the limit", s)
	}
	if !strings.Contains(s, "then: [2] <nil>") {
		t.Errorf("the host did not answer the next call: %q", s)
	}
}

// TestHostAPIBoundsCompletions: a real plugin subprocess asks the host for
// 32 completions at once, then 32 one after the other. Each is a request
// to the host's model on its account, and each running call holds its
// prompt in the host's memory: the host runs at most
// limits.hostCallsInFlight at once and answers at most
// limits.completeCalls in the plugin's call, refusing the rest at once
// with RESOURCE_EXHAUSTED naming the limit.
func TestHostAPIBoundsCompletions(t *testing.T) {
	var mu sync.Mutex
	running, most, total := 0, 0, 0
	host := &sdktest.FakeHost{CompleteFunc: func(context.Context, hooks.CompleteRequest) (hooks.CompleteResponse, error) {
		mu.Lock()
		running++
		total++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // so that the calls overlap
		mu.Lock()
		running--
		mu.Unlock()
		return hooks.CompleteResponse{Text: "ok", FinishReason: "stop"}, nil
	}}
	_, d := startAll(t, pluginhost.Options{Host: host}, nil, spec("flood", 1, "-before-compact", "flood"))
	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil {
		t.Fatal(err)
	}
	if out.Compaction == nil {
		t.Fatal("no compaction from the plugin")
	}
	lim := dispatch.DefaultLimits()
	mu.Lock()
	defer mu.Unlock()
	if most > lim.HostCallsInFlight || total != lim.CompleteCalls {
		t.Errorf("the host ran %d completions, at most %d at once; want %d, at most %d at once", total, most, lim.CompleteCalls, lim.HostCallsInFlight)
	}
	s := out.Compaction.Summary
	if !strings.Contains(s, "ResourceExhausted") || !strings.Contains(s, "limits.completeCalls (16)") {
		t.Errorf("plugin saw: %q, want the completions past the bound refused naming limits.completeCalls", s)
	}
}

// TestHostCallsEndWithThePluginCall: a real plugin subprocess starts 4
// completions on the host under a context of its own and returns without
// waiting for them. Each is a request to the host's model on the
// operator's account: once the plugin call has returned, every one of them
// is cancelled — the host's Complete sees its context end — rather than
// left running under the plugin's request context, which the plugin keeps
// open.
func TestHostCallsEndWithThePluginCall(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	var mu sync.Mutex
	cancelled := make(chan error, 16)
	host := &sdktest.FakeHost{CompleteFunc: func(ctx context.Context, _ hooks.CompleteRequest) (hooks.CompleteResponse, error) {
		mu.Lock()
		f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, _ = f.WriteString("x")
			f.Close()
		}
		mu.Unlock()
		select {
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
			return hooks.CompleteResponse{}, ctx.Err()
		case <-time.After(time.Minute): // the model's answer, long after the call
			return hooks.CompleteResponse{Text: "late", FinishReason: "stop"}, nil
		}
	}}
	_, d := startAll(t, pluginhost.Options{Host: host}, nil, spec("leave", 1, "-before-compact", "leave", "-marker", marker))
	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil {
		t.Fatal(err)
	}
	if out.Compaction == nil || out.Compaction.Summary != "left" {
		t.Fatalf("plugin answered %+v", out)
	}
	for i := range 4 {
		select {
		case cause := <-cancelled:
			if !strings.Contains(fmt.Sprint(cause), "plugin call") {
				t.Errorf("completion %d ended with %v, want the end of its plugin call as the cause", i, cause)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of 4 completions still run on the host after their plugin call returned", 4-i)
		}
	}
}
