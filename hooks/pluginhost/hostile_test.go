package pluginhost_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/hooks/pluginhost"
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
	lim := hooks.DefaultLimits()
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
