package sdktest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// benchEvent is a session_before_compact with n messages of about 1 KiB.
func benchEvent(n int) *hooks.BeforeCompactEvent {
	msg := json.RawMessage(`{"role":"user","content":"` + strings.Repeat("x", 1000) + `"}`)
	ev := &hooks.BeforeCompactEvent{SessionID: "s1"}
	for range n {
		ev.Preparation.MessagesToSummarize = append(ev.Preparation.MessagesToSummarize, msg)
	}
	return ev
}

func benchCalls(b *testing.B, h *sdktest.Harness) {
	for _, n := range []int{1, 100, 10000} {
		ev := benchEvent(n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := h.BeforeCompact(context.Background(), ev)
				if err != nil || res == nil {
					b.Fatalf("%+v, %v", res, err)
				}
			}
		})
	}
}

// BenchmarkInProcessCall is one session_before_compact to a handler value
// through sdktest's in-process mode.
func BenchmarkInProcessCall(b *testing.B) {
	benchCalls(b, sdktest.InProcess(b, hooks.Funcs{OnBeforeCompact: func(_ context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
		return &hooks.BeforeCompactResult{Compaction: &hooks.Compaction{Summary: "ok", FirstKeptEntryID: "e1"}}, nil
	}}))
}

// BenchmarkSubprocessCall is the same call to the probe plugin as a
// subprocess, for comparison.
func BenchmarkSubprocessCall(b *testing.B) {
	bin, err := probeBinary()
	if err != nil {
		b.Fatal(err)
	}
	benchCalls(b, sdktest.Subprocess(b, bin))
}

// BenchmarkInProcessStart is the cost of one in-process harness: serving
// the handler, connecting, Describe, and stopping it.
func BenchmarkInProcessStart(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ip, err := sdk.StartInProcess(hooks.PluginInfo{Name: "bench"}, hooks.Funcs{OnCompact: func(context.Context, *hooks.CompactEvent) error { return nil }})
		if err != nil {
			b.Fatal(err)
		}
		_ = ip.Close()
	}
}
