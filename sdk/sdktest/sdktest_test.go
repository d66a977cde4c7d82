package sdktest_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

func TestFakeHost(t *testing.T) {
	f := &sdktest.FakeHost{Sessions: map[string][]json.RawMessage{"s": {json.RawMessage(`{"id":"a"}`)}}}
	ctx := context.Background()
	if e, err := f.ReadEntries(ctx, hooks.ReadEntriesRequest{SessionID: "s"}); err != nil || len(e) != 1 {
		t.Fatalf("ReadEntries = %v, %v", e, err)
	}
	if _, err := f.ReadEntries(ctx, hooks.ReadEntriesRequest{SessionID: "missing"}); err == nil {
		t.Fatal("missing session read")
	}
	if n, err := f.EstimateTokens(ctx, []json.RawMessage{json.RawMessage(`12345678`)}); err != nil || !reflect.DeepEqual(n, []int{2}) {
		t.Fatalf("EstimateTokens = %v, %v", n, err)
	}
	if r, err := f.Complete(ctx, hooks.CompleteRequest{Prompt: "p"}); err != nil || r.Text != "completion of: p" || r.FinishReason != "stop" {
		t.Fatalf("Complete = %+v, %v", r, err)
	}
	if err := f.Log(ctx, hclog.Warn, "m", "k", 1); err != nil {
		t.Fatal(err)
	}
	if logs := f.Logs(); len(logs) != 1 || logs[0].Message != "m" || logs[0].Level != hclog.Warn {
		t.Fatalf("Logs = %+v", logs)
	}
	want := []string{"ReadEntries", "ReadEntries", "EstimateTokens", "Complete", "Log"}
	if got := f.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Calls = %v", got)
	}
}

func TestBuildError(t *testing.T) {
	_, err := sdktest.BuildTo(t.TempDir(), "./no/such/package")
	if err == nil || !strings.Contains(err.Error(), "go build ./no/such/package") {
		t.Fatalf("err = %v", err)
	}
}

func TestInProcessUsesTheDispatcher(t *testing.T) {
	h := sdktest.InProcess(t, hooks.Funcs{OnBeforeCompact: func(context.Context, *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
		return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{Summary: "", FirstKeptEntryID: "e1"}}, nil
	}}, sdktest.WithInfo(hooks.PluginInfo{Name: "mine"}))
	// The raw answer comes back as the plugin gave it...
	res, err := h.BeforeCompact(context.Background(), &hooks.BeforeCompactEvent{})
	if err != nil || res.Compaction == nil {
		t.Fatalf("raw = %+v, %v", res, err)
	}
	// ...and the Dispatcher shows that the host would reject it.
	out, err := h.Dispatcher.BeforeCompact(context.Background(), &hooks.BeforeCompactEvent{}, hooks.CompactionLimits{})
	if err != nil || out.Compaction != nil {
		t.Fatalf("dispatched = %+v, %v; want the empty summary rejected", out, err)
	}
	if h.Plugin.Info().Name != "mine" {
		t.Fatalf("info = %+v", h.Plugin.Info())
	}
}

// TestInProcessServeOpts: a plugin written for sdk.ServePlugin is tested
// with the same ServeOpts its main serves; only the fields set are events.
func TestInProcessServeOpts(t *testing.T) {
	h := sdktest.InProcess(t, sdk.ServeOpts{Compacting: sdk.CompactingFunc(func(context.Context, *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
		return &sdk.CompactingResult{Context: []string{"typed"}}, nil
	})})
	if !h.Plugin.Implements(sdk.EventCompacting) || h.Plugin.Implements(sdk.EventBeforeCompact) {
		t.Fatal("the plugin must handle exactly the event of the field set")
	}
	out, err := h.Dispatcher.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1"})
	if err != nil || len(out.Context) != 1 || out.Context[0] != "typed" {
		t.Fatalf("Compacting = %+v, %v", out, err)
	}
}
