package dispatch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// BenchmarkDispatcherOverhead: the Dispatcher's own cost for a chain of five
// in-process plugins that pass (deadline, goroutine, recover, observation).
func BenchmarkDispatcherOverhead(b *testing.B) {
	var ps []hooks.Plugin
	for i := range 5 {
		ps = append(ps, dispatch.NewPlugin(info(fmt.Sprint("p", i), i, i), hooks.Funcs{
			OnBeforeCompact: func(context.Context, *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) { return nil, nil },
		}))
	}
	d, err := dispatch.NewDispatcher(dispatch.Options{Observe: func(hooks.Observation) {}}, ps...)
	if err != nil {
		b.Fatal(err)
	}
	ev := &hooks.BeforeCompactEvent{SessionID: "s"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.BeforeCompact(context.Background(), ev, hooks.CompactionLimits{}); err != nil {
			b.Fatal(err)
		}
	}
}
