package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// binary is the plugin built once for the subprocess tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "guard-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = sdktest.BuildTo(dir, ".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func label(id, target, text string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"label","id":%q,"parentId":null,"timestamp":"2026-01-01T00:00:00Z","targetId":%q,"label":%q}`, id, target, text))
}

func msg(id string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"message","id":%q,"parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}`, id))
}

func TestBeforeCompact(t *testing.T) {
	tests := []struct {
		name       string
		reason     sdk.Reason
		path       []json.RawMessage
		labels     []sdk.Label
		wantCancel bool
	}{
		{name: "no labels", reason: sdk.ReasonManual, path: []json.RawMessage{msg("a1"), msg("a2")}},
		{name: "labelled manual", reason: sdk.ReasonManual, path: []json.RawMessage{msg("a1"), label("l1", "a1", "no-compact")}, wantCancel: true},
		{name: "labelled threshold", reason: sdk.ReasonThreshold, path: []json.RawMessage{msg("a1"), label("l1", "a1", "no-compact")}, wantCancel: true},
		{name: "labelled overflow is never blocked", reason: sdk.ReasonOverflow, path: []json.RawMessage{msg("a1"), label("l1", "a1", "no-compact")}},
		{name: "cleared by an empty label", reason: sdk.ReasonManual, path: []json.RawMessage{msg("a1"), label("l1", "a1", "no-compact"), label("l2", "a1", "")}},
		{name: "replaced by another label", reason: sdk.ReasonManual, path: []json.RawMessage{msg("a1"), label("l1", "a1", "no-compact"), label("l2", "a1", "checkpoint")}},
		{name: "clearing another target does not help", reason: sdk.ReasonManual, path: []json.RawMessage{msg("a1"), msg("a2"), label("l1", "a1", "no-compact"), label("l2", "a2", "")}, wantCancel: true},
		{name: "set again after clearing", reason: sdk.ReasonThreshold, path: []json.RawMessage{label("l1", "a1", "no-compact"), label("l2", "a1", ""), label("l3", "a1", "no-compact")}, wantCancel: true},
		{name: "other labels only", reason: sdk.ReasonManual, path: []json.RawMessage{label("l1", "a1", "important")}},
		{name: "labels list without path", reason: sdk.ReasonManual, labels: []sdk.Label{{EntryID: "a1", Label: "no-compact"}}, wantCancel: true},
		{name: "labels list cleared without path", reason: sdk.ReasonManual, labels: []sdk.Label{{EntryID: "a1", Label: "no-compact"}, {EntryID: "a1", Label: ""}}},
		{name: "a label spelled with escapes still counts", reason: sdk.ReasonManual, path: []json.RawMessage{msg("a1"), json.RawMessage(`{"type":"\u006cabel","id":"l1","parentId":null,"timestamp":"2026-01-01T00:00:00Z","targetId":"a1","\u006cabel":"no-compact"}`)}, wantCancel: true},
		{name: "malformed entries are skipped", reason: sdk.ReasonManual, path: []json.RawMessage{json.RawMessage(`{"type":"label"`), json.RawMessage(`[]`), label("l1", "a1", "no-compact")}, wantCancel: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.InProcess(t, &guard{label: "no-compact"})
			res, err := h.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{
				SessionID: "s1", Reason: tc.reason, PathEntries: tc.path, Labels: tc.labels,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := res != nil && res.Cancel; got != tc.wantCancel {
				t.Fatalf("cancel = %v (%+v), want %v", got, res, tc.wantCancel)
			}
			if tc.wantCancel && !strings.Contains(res.CancelReason, "a1") {
				t.Errorf("cancel reason %q does not name the labelled entry", res.CancelReason)
			}
			if !tc.wantCancel && res != nil {
				t.Errorf("want no opinion, got %+v", res)
			}
		})
	}
}

func TestSubprocess(t *testing.T) {
	ctx := context.Background()
	h := sdktest.Subprocess(t, binary, sdktest.WithArgs("--label", "frozen"))
	if !h.Plugin.Implements(sdk.EventBeforeCompact) || h.Plugin.Implements(sdk.EventCompacting) {
		t.Fatal("guard must handle exactly session_before_compact")
	}
	path := []json.RawMessage{msg("a1"), label("l1", "a1", "frozen")}
	out, err := h.Dispatcher.BeforeCompact(ctx, &sdk.BeforeCompactEvent{SessionID: "s1", Reason: sdk.ReasonThreshold, PathEntries: path}, hooks.CompactionLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Cancelled {
		t.Fatalf("threshold compaction under a label: outcome %+v, want cancelled", out)
	}
	out, err = h.Dispatcher.BeforeCompact(ctx, &sdk.BeforeCompactEvent{SessionID: "s1", Reason: sdk.ReasonOverflow, PathEntries: path}, hooks.CompactionLimits{})
	if err != nil || out.Cancelled {
		t.Fatalf("overflow recovery: outcome %+v, %v; want it to go ahead", out, err)
	}
	// The default label no longer blocks once --label chose another.
	res, err := h.BeforeCompact(ctx, &sdk.BeforeCompactEvent{Reason: sdk.ReasonManual, PathEntries: []json.RawMessage{label("l1", "a1", "no-compact")}})
	if err != nil || res != nil {
		t.Fatalf("default label with --label frozen: got %+v, %v", res, err)
	}
}

func TestEmptyLabelIsAUsageError(t *testing.T) {
	out, err := exec.Command(binary, "--label", " ").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit: %v, want status 2", err)
	}
	if !strings.Contains(string(out), "--label must not be empty") {
		t.Fatalf("output %q does not explain the problem", out)
	}
}

// TestCutPath: when the host cut the path but not the labels, the labels
// in force decide (a label entry in the cut path is not looked at).
func TestCutPath(t *testing.T) {
	h := sdktest.InProcess(t, &guard{label: "no-compact"})
	ctx := context.Background()
	ev := &sdk.BeforeCompactEvent{Reason: sdk.ReasonManual, PathTruncated: true,
		PathEntries: []json.RawMessage{label("l1", "a1", "no-compact")}}
	if res, err := h.BeforeCompact(ctx, ev); err != nil || res != nil {
		t.Fatalf("cut path, no label in force: got %+v, %v", res, err)
	}
	ev.Labels = []sdk.Label{{EntryID: "a1", Label: "no-compact"}}
	if res, err := h.BeforeCompact(ctx, ev); err != nil || res == nil || !res.Cancel {
		t.Fatalf("cut path, label in force: got %+v, %v; want a cancel", res, err)
	}
}
