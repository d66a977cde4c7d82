package pluginhost_test

import (
	"context"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
	"go.uber.org/goleak"
)

// TestStopLeavesNoGoroutines: a full life cycle — start, calls including a
// host API round trip over the broker, a crash and restart, stop — ends every
// goroutine the supervisor started.
func TestStopLeavesNoGoroutines(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	sup := pluginhost.NewSupervisor(spec("tidy", 1, "-before-compact", "exit", "-compact", "record"), pluginhost.Options{MinBackoff: 1})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := sup.Compact(context.Background(), &hooks.CompactEvent{}); err != nil {
		t.Fatal(err)
	}
	_, _ = sup.BeforeCompact(context.Background(), preparedEvent()) // crashes the process
	if err := sup.WaitRunning(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, why := sup.Crashes(); n != 1 || why == "" {
		t.Errorf("Crashes() = %d, %q; want one, with its reason", n, why)
	}
	sup.Stop(context.Background())
	goleak.VerifyNone(t, ignore)
}
