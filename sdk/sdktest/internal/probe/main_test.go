package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/wire"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// Call timeouts: quick for the calls that are meant to miss it (short
// enough to wait out), patient for the others, which on a loaded machine
// may take a while (the huge answer builds and encodes 256 MiB).
const (
	quick   = time.Second
	patient = time.Minute
)

// harnesses starts the probe both ways: in this process over a real gRPC
// connection, and as a subprocess through the host's supervisor.
func harnesses(t *testing.T, timeout time.Duration) map[string]*sdktest.Harness {
	t.Helper()
	opts := []sdktest.Option{
		sdktest.WithInfo(hooks.PluginInfo{Name: "probe", Timeout: timeout, Failure: hooks.FailureClosed}),
		sdktest.WithHost(&sdktest.FakeHost{Sessions: map[string][]json.RawMessage{"s1": {json.RawMessage(`{}`)}, "other": {json.RawMessage(`{}`)}}}),
	}
	return map[string]*sdktest.Harness{
		"in-process": sdktest.InProcess(t, probe{}, opts...),
		"subprocess": sdktest.Subprocess(t, binary, opts...),
	}
}

// binary is the probe, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "probe-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = sdktest.BuildTo(dir, ".")
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// answer is what a caller of the plugin can tell apart about one call.
type answer struct {
	summary  string
	err      string
	deadline bool // errors.Is(err, context.DeadlineExceeded)
	canceled bool // errors.Is(err, context.Canceled)
	tooLarge bool // errors.Is(err, dispatch.ErrPayloadTooLarge)
}

func ask(h *sdktest.Harness, ev *hooks.BeforeCompactEvent) answer {
	res, err := h.BeforeCompact(context.Background(), ev)
	var a answer
	if res != nil && res.Compaction != nil {
		a.summary = res.Compaction.Summary
	}
	if err != nil {
		a.err = err.Error()
		a.deadline = errors.Is(err, context.DeadlineExceeded)
		a.canceled = errors.Is(err, context.Canceled)
		a.tooLarge = errors.Is(err, dispatch.ErrPayloadTooLarge)
	}
	if a.deadline {
		// gRPC words a missed deadline after whichever side noticed first,
		// the caller's timer or the stream's reset; only the kind counts.
		a.err = "(deadline)"
	}
	return a
}

// TestBothModesAnswerAlike: every way a handler can fail — an error, a
// gRPC status of its own, a panic, missing its deadline while honouring
// it or not, a result too large for the wire, a host call outside its
// session — reaches the host as the same error in both modes, and so do
// the successes. The host API's own errors read differently (see differs).
func TestBothModesAnswerAlike(t *testing.T) {
	hs := map[time.Duration]map[string]*sdktest.Harness{quick: harnesses(t, quick), patient: harnesses(t, patient)}
	tests := []struct {
		instructions string
		check        func(answer) bool
		// differs: the host API is reached through the broker from a
		// subprocess and directly in-process, so its errors read
		// differently (the refusal is the same).
		differs bool
	}{
		{"", func(a answer) bool { return a.summary == "ok" && a.err == "" }, false},
		{"error", func(a answer) bool { return a.err == "probe says no" }, false},
		{"status", func(a answer) bool { return a.err == "probe denies" }, false},
		{"panic", func(a answer) bool { return a.err == "session_before_compact handler panicked: probe panics" }, false},
		{"wait", func(a answer) bool { return a.deadline }, false},
		{"oversleep", func(a answer) bool { return a.deadline && a.summary == "" }, false},
		{"deadline", func(a answer) bool { return a.summary == "deadline set: true, in the future: true" }, false},
		{"huge", func(a answer) bool {
			return strings.Contains(a.err, "larger than max") && !a.tooLarge
		}, false},
		{"host", func(a answer) bool { return a.summary == "completion of: hello" }, false},
		{"other-session", func(a answer) bool {
			return strings.Contains(a.err, `permission denied: this call may read session "s1" only`)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.instructions, func(t *testing.T) {
			ev := &hooks.BeforeCompactEvent{SessionID: "s1", CustomInstructions: tt.instructions}
			got := map[string]answer{}
			timeout := patient
			if tt.instructions == "wait" || tt.instructions == "oversleep" {
				timeout = quick
			}
			for mode, h := range hs[timeout] {
				got[mode] = ask(h, ev)
				if !tt.check(got[mode]) {
					t.Errorf("%s: %+v", mode, shorten(got[mode]))
				}
			}
			if in, sub := got["in-process"], got["subprocess"]; in != sub && !tt.differs {
				t.Errorf("the modes differ:\nin-process %+v\nsubprocess %+v", shorten(in), shorten(sub))
			}
		})
	}
}

// TestTimeoutsAndFailuresThroughTheDispatcher: the Dispatcher classifies
// both modes' failures alike (timeout, panic, plain error).
func TestTimeoutsAndFailuresThroughTheDispatcher(t *testing.T) {
	hs := harnesses(t, quick)
	for _, tc := range []struct {
		instructions string
		want         error
	}{
		{"wait", hooks.ErrTimeout},
		{"oversleep", hooks.ErrTimeout},
		{"error", hooks.ErrPluginFailed},
		{"panic", hooks.ErrPluginFailed},
	} {
		for mode, h := range hs {
			ev := &hooks.BeforeCompactEvent{SessionID: "s1", CustomInstructions: tc.instructions}
			_, err := h.Dispatcher.BeforeCompact(context.Background(), ev, hooks.CompactionLimits{})
			if !errors.Is(err, tc.want) || !errors.Is(err, hooks.ErrPluginFailed) {
				t.Errorf("%s %s: err = %v, want %v", mode, tc.instructions, err, tc.want)
			}
		}
	}
}

// TestTooLargeEventIsNotSent: an event the wire cannot carry is refused
// before sending, in both modes, as a host error.
func TestTooLargeEventIsNotSent(t *testing.T) {
	name := strings.Repeat("f", 1<<20)
	ev := &hooks.BeforeCompactEvent{SessionID: "s1"}
	for range wire.MaxMessageSize>>20 + 1 {
		ev.Preparation.ReadFiles = append(ev.Preparation.ReadFiles, name) // shared bytes: cheap
	}
	for mode, h := range harnesses(t, patient) {
		if a := ask(h, ev); !a.tooLarge {
			t.Errorf("%s: %+v, want ErrPayloadTooLarge", mode, shorten(a))
		}
	}
}

func shorten(a answer) answer {
	if len(a.summary) > 80 {
		a.summary = a.summary[:80] + "…"
	}
	return a
}

var _ sdk.BeforeCompactHandler = probe{}
