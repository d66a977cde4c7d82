package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// binary is the plugin built from this directory, once for the whole run.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "my-pith-plugin-test")
	if err == nil {
		binary, err = sdktest.BuildTo(dir, ".")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// harnesses runs each test against the plugin in both of sdktest's modes:
// in-process (fast, a debugger stops in the handler) and as the real
// binary started by the host's own supervisor, so that main, the
// environment and the handshake are tested too.
func harnesses(t *testing.T, opts ...sdktest.Option) map[string]*sdktest.Harness {
	t.Helper()
	return map[string]*sdktest.Harness{
		"in-process": sdktest.InProcess(t, sdk.ServeOpts{BeforeCompact: newPlugin(), Compacting: newPlugin()}, opts...),
		"subprocess": sdktest.Subprocess(t, binary, opts...),
	}
}

func TestThresholdCompactionIsHeldOffByTheLabel(t *testing.T) {
	for name, h := range harnesses(t) {
		t.Run(name, func(t *testing.T) {
			ev := &sdk.BeforeCompactEvent{
				SessionID: "s1", Reason: sdk.ReasonThreshold,
				Labels: []sdk.Label{{EntryID: "e1", Label: defaultLabel}},
			}
			res, err := h.BeforeCompact(context.Background(), ev)
			if err != nil || res == nil || !res.Cancel {
				t.Fatalf("got %+v, %v; want a cancel", res, err)
			}
			ev.Reason = sdk.ReasonManual
			if res, err := h.BeforeCompact(context.Background(), ev); err != nil || res != nil {
				t.Fatalf("a manual compaction: got %+v, %v; want no opinion", res, err)
			}
		})
	}
}

// A long session's event carries only the newest labels: the plugin must
// find the label on the whole path through the host's API.
func TestTruncatedLabelsAreReadFromThePath(t *testing.T) {
	host := &sdktest.FakeHost{Sessions: map[string][]json.RawMessage{"s1": {
		json.RawMessage(`{"type":"message","id":"e1"}`),
		json.RawMessage(`{"type":"label","id":"e2","targetId":"e1","label":"` + defaultLabel + `"}`),
	}}}
	for name, h := range harnesses(t, sdktest.WithHost(host)) {
		t.Run(name, func(t *testing.T) {
			res, err := h.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{
				SessionID: "s1", Reason: sdk.ReasonThreshold, LeafID: "e2", LabelsTruncated: true, PathTruncated: true,
			})
			if err != nil || res == nil || !res.Cancel {
				t.Fatalf("got %+v, %v; want a cancel", res, err)
			}
		})
	}
}

func TestCompactingNamesTheModifiedFiles(t *testing.T) {
	for name, h := range harnesses(t) {
		t.Run(name, func(t *testing.T) {
			res, err := h.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1", ModifiedFiles: []string{"a.go", "b.go"}})
			if err != nil || res == nil || len(res.Context) != 1 || res.Context[0] != "Files changed in the summarized part: a.go, b.go" {
				t.Fatalf("got %+v, %v", res, err)
			}
		})
	}
}

// The label is the plugin's to configure through its `env` in the host's
// configuration; only the subprocess reads the real environment.
func TestTheLabelComesFromTheEnvironment(t *testing.T) {
	h := sdktest.Subprocess(t, binary, sdktest.WithEnv(map[string]string{"MANUAL_ONLY_LABEL": "frozen"}))
	res, err := h.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{
		SessionID: "s1", Reason: sdk.ReasonThreshold, Labels: []sdk.Label{{EntryID: "e1", Label: "frozen"}},
	})
	if err != nil || res == nil || !res.Cancel {
		t.Fatalf("got %+v, %v; want a cancel", res, err)
	}
}
