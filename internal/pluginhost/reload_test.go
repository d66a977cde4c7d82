package pluginhost_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// TestReloadWhileCallsInFlight reconciles the plugin set the way a config
// reload does (start the added and changed plugins, swap, stop the removed
// and replaced ones) while four goroutines keep calling session.compacting.
// Every plugin is "failure: closed", so a call that reached a stopping
// plugin would fail the operation: none may.
func TestReloadWhileCallsInFlight(t *testing.T) {
	ctx := context.Background()
	log := hclog.NewNullLogger()
	h := pluginhost.NewHost(pluginhost.Options{Logger: log})
	defer h.StopAll(ctx)
	closed := func(s pluginhost.Spec) pluginhost.Spec { s.Failure = hooks.FailureClosed; return s }
	ps, retire, err := h.Apply(ctx, []pluginhost.Spec{
		closed(spec("keep", 1, "-compacting", "context")),
		closed(spec("change", 2, "-compacting", "context")),
		closed(spec("drop", 3, "-compacting", "context")),
	})
	if err != nil {
		t.Fatal(err)
	}
	retire(ctx)
	d, err := dispatch.NewDispatcher(dispatch.Options{Logger: log}, ps...)
	if err != nil {
		t.Fatal(err)
	}
	changePid, dropPid := h.Supervisor("change").Pid(), h.Supervisor("drop").Pid()

	var calls, failures atomic.Int64
	var mu sync.Mutex
	var lastErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := d.Compacting(ctx, &hooks.CompactingEvent{SessionID: "s", Reason: hooks.ReasonManual}); err != nil {
					failures.Add(1)
					mu.Lock()
					lastErr = err
					mu.Unlock()
				}
				calls.Add(1)
			}
		})
	}
	waitCalls := func(n int64) {
		deadline := time.Now().Add(30 * time.Second)
		for calls.Load() < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitCalls(50)

	ps, retire, err = h.Apply(ctx, []pluginhost.Spec{
		closed(spec("keep", 1, "-compacting", "context")),
		closed(spec("change", 2, "-compacting", "context", "-prompt", "v2")),
		closed(spec("add", 4, "-compacting", "context")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetPlugins(ps); err != nil {
		t.Fatal(err)
	}
	retire(ctx)
	waitCalls(calls.Load() + 50)
	close(stop)
	wg.Wait()

	if n := failures.Load(); n > 0 {
		t.Fatalf("%d of %d calls failed during the reload; last: %v", n, calls.Load(), lastErr)
	}
	out, err := d.Compacting(ctx, &hooks.CompactingEvent{SessionID: "s", Reason: hooks.ReasonManual})
	if err != nil {
		t.Fatal(err)
	}
	var from []string
	for _, line := range out.Context {
		from = append(from, strings.SplitN(line, ":", 2)[0])
	}
	if !slices.Equal(from, []string{"keep", "change", "add"}) || out.Prompt != "v2" {
		t.Fatalf("after the reload: context from %v, prompt %q", from, out.Prompt)
	}
	waitGone(t, dropPid)
	waitGone(t, changePid)
}
