package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// TestTimelineResults: one operation's observer sees what each call came
// to — no opinion, a failure with the policy applied, a cancel with its
// reason — in chain order, and the dispatcher's own Observe sees the same.
func TestTimelineResults(t *testing.T) {
	rec := &recorder{}
	var global []hooks.Observation
	d := newDispatcher(t, func(o hooks.Observation) { global = append(global, o) },
		bc(rec, info("quiet", 1, 0), answer(nil)),
		bc(rec, info("broken", 2, 0), fail(errors.New("disk on fire"))),
		bc(rec, info("guard", 3, 0), answer(&hooks.BeforeCompactResult{Cancel: true, CancelReason: "not now"})),
		bc(rec, info("never", 4, 0), answer(nil)),
	)
	tl := &dispatch.Timeline{}
	outer := &dispatch.Timeline{}
	ctx := dispatch.WithObserver(dispatch.WithObserver(context.Background(), outer.Observe), tl.Observe)
	out, err := d.BeforeCompact(ctx, &hooks.BeforeCompactEvent{}, hooks.CompactionLimits{})
	if err != nil || !out.Cancelled {
		t.Fatalf("out %+v, err %v", out, err)
	}
	steps := tl.Steps()
	if len(steps) != 3 || len(outer.Steps()) != 3 || len(global) != 3 {
		t.Fatalf("steps %+v, outer %d, global %d", steps, len(outer.Steps()), len(global))
	}
	want := []struct{ plugin, result, reason string }{
		{"quiet", hooks.ResultNoOpinion, ""},
		{"broken", hooks.ResultFailure, "disk on fire; failure: open, result ignored"},
		{"guard", hooks.ResultCancel, "not now"},
	}
	for i, w := range want {
		s := steps[i]
		if s.Plugin != w.plugin || s.Event != hooks.EventBeforeCompact || s.Result != w.result || !strings.Contains(s.Reason, w.reason) {
			t.Errorf("step %d = %+v, want %+v", i, s, w)
		}
	}
	if global[2].Result != hooks.ResultCancel || global[2].Reason != "not now" {
		t.Errorf("Observe saw %+v", global[2])
	}
}

// TestTimelineClipsReason: a plugin's reason is stored in the session
// file, so a huge one is cut (on a rune boundary).
func TestTimelineClipsReason(t *testing.T) {
	tl := &dispatch.Timeline{}
	tl.Observe(hooks.Observation{Plugin: "p", Result: hooks.ResultCancel, Reason: strings.Repeat("é", 10000)})
	r := tl.Steps()[0].Reason
	if len(r) > 600 || !strings.HasSuffix(r, "…") || strings.ContainsRune(r, '\uFFFD') {
		t.Fatalf("reason of %d bytes: %q…", len(r), r[:20])
	}
}
