package pluginhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// latencies collects per-call durations and reports their percentiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, unit string, scale time.Duration) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	at := func(q float64) float64 { return float64(l.d[int(q*float64(len(l.d)-1))]) / float64(scale) }
	b.ReportMetric(at(0.50), "p50-"+unit)
	b.ReportMetric(at(0.99), "p99-"+unit)
}

func benchDispatcher(b *testing.B, n int) *dispatch.Dispatcher {
	b.Helper()
	h := pluginhost.NewHost(pluginhost.Options{})
	b.Cleanup(func() { h.StopAll(context.Background()) })
	var specs []pluginhost.Spec
	for i := range n {
		specs = append(specs, spec(fmt.Sprint("p", i), i, "-before-compact", "none", "-compacting", "context"))
	}
	ps, _, err := h.Apply(context.Background(), specs)
	if err != nil {
		b.Fatal(err)
	}
	d, err := dispatch.NewDispatcher(dispatch.Options{}, ps...)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkOneCall: one session_before_compact through the Dispatcher to one
// plugin subprocess (mutual TLS), the payload of a small preparation.
func BenchmarkOneCall(b *testing.B) {
	d := benchDispatcher(b, 1)
	ev := preparedEvent()
	var l latencies
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := d.BeforeCompact(context.Background(), ev, limits); err != nil {
			b.Fatal(err)
		}
		l.add(time.Since(start))
	}
	l.report(b, "µs", time.Microsecond)
}

// BenchmarkChain5: the sequential session_before_compact chain over five
// plugins that all pass.
func BenchmarkChain5(b *testing.B) {
	d := benchDispatcher(b, 5)
	ev := preparedEvent()
	var l latencies
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := d.BeforeCompact(context.Background(), ev, limits); err != nil {
			b.Fatal(err)
		}
		l.add(time.Since(start))
	}
	l.report(b, "µs", time.Microsecond)
}

// BenchmarkConcurrent100: 100 concurrent session.compacting dispatches to
// one plugin; the metrics are per call.
func BenchmarkConcurrent100(b *testing.B) {
	d := benchDispatcher(b, 1)
	ev := &hooks.CompactingEvent{SessionID: "s1", Messages: preparedEvent().Preparation.MessagesToSummarize}
	var l latencies
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				if _, err := d.Compacting(context.Background(), ev); err != nil {
					b.Error(err)
				}
				l.add(time.Since(start))
			}()
		}
		wg.Wait()
	}
	l.report(b, "µs", time.Microsecond)
}

// BenchmarkStartup: process start, go-plugin handshake with mutual TLS (a P-256 key
// made on each side), broker setup and Describe.
func BenchmarkStartup(b *testing.B) {
	var l latencies
	for b.Loop() {
		sup := pluginhost.NewSupervisor(spec("boot", 1, "-compact", "record"), pluginhost.Options{})
		start := time.Now()
		if err := sup.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		l.add(time.Since(start))
		b.StopTimer()
		sup.Stop(context.Background())
		b.StartTimer()
	}
	l.report(b, "ms", time.Millisecond)
}

// BenchmarkRawPing is the transport baseline for BenchmarkOneCall: one Ping
// RPC on the supervisor, no Dispatcher and no payload.
func BenchmarkRawPing(b *testing.B) {
	sup := pluginhost.NewSupervisor(spec("ping", 1, "-compact", "record"), pluginhost.Options{})
	if err := sup.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sup.Stop(context.Background()) })
	var l latencies
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := sup.Ping(context.Background()); err != nil {
			b.Fatal(err)
		}
		l.add(time.Since(start))
	}
	l.report(b, "µs", time.Microsecond)
}

// BenchmarkHostAPIConcurrent100: 100 concurrent session_before_compact
// dispatches to one plugin that builds each answer through the host API
// (ReadEntries, EstimateTokens, Complete and Log, one after the other):
// 100 plugin calls sharing the plugin's one host-API connection, more
// than its streams (4 × hostCallsInFlight). The metrics are per call.
func BenchmarkHostAPIConcurrent100(b *testing.B) {
	ev := preparedEvent()
	host := &sdktest.FakeHost{Sessions: map[string][]json.RawMessage{ev.SessionID: ev.PathEntries}}
	h := pluginhost.NewHost(pluginhost.Options{Host: host})
	b.Cleanup(func() { h.StopAll(context.Background()) })
	ps, _, err := h.Apply(context.Background(), []pluginhost.Spec{spec("host", 1, "-before-compact", "host")})
	if err != nil {
		b.Fatal(err)
	}
	d, err := dispatch.NewDispatcher(dispatch.Options{}, ps...)
	if err != nil {
		b.Fatal(err)
	}
	var l latencies
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				out, err := d.BeforeCompact(context.Background(), ev, limits)
				if err != nil || out.Compaction == nil {
					b.Error(out, err)
				}
				l.add(time.Since(start))
			}()
		}
		wg.Wait()
	}
	l.report(b, "µs", time.Microsecond)
}
