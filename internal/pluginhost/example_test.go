package pluginhost_test

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// Example shows the wiring a host does: start the configured plugins, hand
// them to the Dispatcher, swap them on a configuration reload without
// dropping an event, and stop them all on SIGINT/SIGTERM.
func Example() {
	log := hclog.New(&hclog.LoggerOptions{Name: "pith"})
	var api hooks.HostAPI // the engine's implementation
	host := pluginhost.NewHost(pluginhost.Options{Logger: log, Host: api})
	dispatcher, _ := dispatch.NewDispatcher(dispatch.Options{Logger: log, Host: api})

	apply := func(specs []pluginhost.Spec) {
		plugins, retire, err := host.Apply(context.Background(), specs)
		if err != nil {
			log.Error("some plugins did not start", "error", err)
		}
		if err := dispatcher.SetPlugins(plugins); err != nil {
			log.Error("plugin set rejected", "error", err)
		}
		retire(context.Background()) // only now stop what was replaced
	}
	apply([]pluginhost.Spec{{
		Name: "audit", Path: "./bin/plugins/audit", Priority: 100,
		Timeout: 5 * time.Second, Failure: hooks.FailureOpen,
	}})

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		host.StopAll(ctx)
		os.Exit(130)
	}()
}
