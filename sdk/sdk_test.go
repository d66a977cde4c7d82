package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

type compactOnly struct{}

func (compactOnly) Compact(context.Context, *sdk.CompactEvent) error { return nil }

type everything struct{ compactOnly }

func (everything) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	switch ev.CustomInstructions {
	case "panic":
		panic("kaboom")
	case "error":
		return nil, errors.New("handler says no")
	case "bad-utf8":
		return &sdk.BeforeCompactResult{Compaction: &sdk.Compaction{Summary: "\xff\xfe", FirstKeptEntryID: "e1"}}, nil
	case "deadline":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &sdk.BeforeCompactResult{Compaction: &sdk.Compaction{Summary: "ok: " + string(ev.Preparation.MessagesToSummarize[0]), FirstKeptEntryID: "e1"}}, nil
}

func (everything) Compacting(context.Context, *sdk.CompactingEvent) (*sdk.CompactingResult, error) {
	return nil, nil
}

func (everything) BeforeTree(ctx context.Context, ev *sdk.BeforeTreeEvent) (*sdk.BeforeTreeResult, error) {
	return &sdk.BeforeTreeResult{Summary: &sdk.BranchSummary{Summary: ev.TargetID}}, nil
}

func (everything) Tree(context.Context, *sdk.TreeEvent) error { return nil }

func TestEvents(t *testing.T) {
	tests := []struct {
		name string
		p    any
		want []hooks.EventID
	}{
		{"one handler", compactOnly{}, []hooks.EventID{sdk.EventCompact}},
		{"all handlers", everything{}, hooks.AllEvents()},
		{"funcs", sdk.Funcs{OnTree: func(context.Context, *sdk.TreeEvent) error { return nil }}, []hooks.EventID{sdk.EventTree}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sdk.Events(tt.p); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Events = %v, want %v", got, tt.want)
			}
			p := sdk.NewPlugin(hooks.PluginInfo{Name: "x"}, tt.p)
			t.Cleanup(func() { _ = p.(io.Closer).Close() })
			for _, e := range hooks.AllEvents() {
				if p.Implements(e) != contains(tt.want, e) {
					t.Errorf("Implements(%s) = %v", e, p.Implements(e))
				}
			}
		})
	}
}

func contains(ids []hooks.EventID, id hooks.EventID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestInProcessAdaptation(t *testing.T) {
	h := sdktest.InProcess(t, everything{})
	msg := json.RawMessage(`{"role":"user","content":"é","extra":{"kept":true}}`)
	tests := []struct {
		instructions string
		wantSummary  string
		wantErr      string
	}{
		{instructions: "", wantSummary: "ok: " + string(msg)},
		{instructions: "panic", wantErr: "handler panicked: kaboom"},
		{instructions: "error", wantErr: "handler says no"},
		// gRPC refuses to marshal it, as it would in a subprocess.
		{instructions: "bad-utf8", wantErr: "string field contains invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.instructions, func(t *testing.T) {
			res, err := h.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{
				CustomInstructions: tt.instructions,
				Preparation:        sdk.Preparation{MessagesToSummarize: []json.RawMessage{msg}},
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || res.Compaction.Summary != tt.wantSummary {
				t.Fatalf("got %+v, %v", res, err)
			}
		})
	}
}

func TestHandlerDeadlineIsATimeout(t *testing.T) {
	p, err := sdk.StartInProcess(hooks.PluginInfo{Name: "slow", Timeout: 20 * time.Millisecond, Failure: hooks.FailureClosed}, everything{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	d, err := dispatch.NewDispatcher(dispatch.Options{}, p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{CustomInstructions: "deadline"}, hooks.CompactionLimits{})
	if !errors.Is(err, hooks.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

func TestHost(t *testing.T) {
	if _, err := sdk.Host(context.Background()).Complete(context.Background(), sdk.CompleteRequest{}); !errors.Is(err, sdk.ErrNoHost) {
		t.Fatalf("outside a handler: %v, want ErrNoHost", err)
	}
	var got string
	h := sdktest.InProcess(t, sdk.Funcs{OnTree: func(ctx context.Context, ev *sdk.TreeEvent) error {
		resp, err := sdk.Host(ctx).Complete(ctx, sdk.CompleteRequest{Prompt: ev.NewLeafID})
		got = resp.Text
		return err
	}})
	if err := h.Tree(context.Background(), &sdk.TreeEvent{NewLeafID: "leaf"}); err != nil {
		t.Fatal(err)
	}
	if got != "completion of: leaf" || !reflect.DeepEqual(h.FakeHost().Calls(), []string{"Complete"}) {
		t.Fatalf("got %q, calls %v", got, h.FakeHost().Calls())
	}
}

// TestNoLLMClients guards the promise that a plugin binary links no LLM
// client, none of the engine and none of go-plugin: the SDK depends on
// hooks types, the wire adapter, gRPC and hclog only (and two leaves of the standard
// library alone: core/jsondepth, through which hooks bounds JSON nesting,
// and core/workspace/deny, the host's deny list that sdk.DeniedPath shows).
func TestNoLLMClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/pith-dev/pith/sdk").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/pith-dev/pith/core/jsondepth", dep == "github.com/pith-dev/pith/core/workspace/deny":
		case strings.Contains(dep, "openai"), strings.Contains(dep, "anthropic"),
			strings.HasPrefix(dep, "github.com/pith-dev/pith/core/"),
			strings.HasPrefix(dep, "github.com/pith-dev/pith/internal/pluginhost"):
			t.Errorf("sdk depends on %s", dep)
		case strings.HasPrefix(dep, "github.com/hashicorp/go-plugin"), dep == "net/rpc", dep == "encoding/gob",
			strings.HasPrefix(dep, "google.golang.org/grpc/reflection"), dep == "testing":
			// go-plugin's server side: its package initialisation is
			// paid at every plugin start (grpcserve.go).
			t.Errorf("sdk depends on %s", dep)
		}
	}
}
