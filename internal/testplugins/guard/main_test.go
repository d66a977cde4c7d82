package main

import (
	"context"
	"testing"

	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

func TestGuard(t *testing.T) {
	harnesses := map[string]func(t *testing.T) *sdktest.Harness{
		"in-process": func(t *testing.T) *sdktest.Harness { return sdktest.InProcess(t, guard{}) },
		"subprocess": func(t *testing.T) *sdktest.Harness { return sdktest.Subprocess(t, sdktest.Build(t, ".")) },
	}
	for name, start := range harnesses {
		t.Run(name, func(t *testing.T) {
			h := start(t)
			ctx := context.Background()

			res, err := h.BeforeCompact(ctx, &sdk.BeforeCompactEvent{Labels: []sdk.Label{{EntryID: "e1", Label: "no-compact"}}})
			if err != nil || res == nil || !res.Cancel {
				t.Fatalf("labelled session: got %+v, %v; want a cancel", res, err)
			}
			res, err = h.BeforeCompact(ctx, &sdk.BeforeCompactEvent{})
			if err != nil || res != nil {
				t.Fatalf("unlabelled session: got %+v, %v; want no opinion", res, err)
			}
			out, err := h.Dispatcher.Compacting(ctx, &sdk.CompactingEvent{})
			if err != nil || len(out.Context) != 1 {
				t.Fatalf("compacting: got %+v, %v", out, err)
			}
			if h.Plugin.Implements(sdk.EventTree) {
				t.Fatal("guard does not handle session_tree")
			}
		})
	}
}
