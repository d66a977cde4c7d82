package sdktest

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// SupervisorOptions tune how the host supervises a subprocess. Zero
// fields keep the host's defaults. The host API and the logger are the
// harness's own.
type SupervisorOptions struct {
	// StartTimeout bounds process start, handshake and Describe (10 s).
	StartTimeout time.Duration
	// HealthInterval is the period of the Ping health check (10 s);
	// negative disables it.
	HealthInterval time.Duration
	// MinBackoff and MaxBackoff bound the restart delay (200 ms, 30 s),
	// doubled for each crash within CrashWindow.
	MinBackoff, MaxBackoff time.Duration
	// CrashBudget crashes within CrashWindow disable the plugin (3 in 5 min).
	CrashBudget int
	CrashWindow time.Duration
}

func (so SupervisorOptions) host(h hooks.HostAPI, log hclog.Logger) pluginhost.Options {
	return pluginhost.Options{
		Logger: log, Host: h,
		StartTimeout: so.StartTimeout, HealthInterval: so.HealthInterval,
		MinBackoff: so.MinBackoff, MaxBackoff: so.MaxBackoff,
		CrashBudget: so.CrashBudget, CrashWindow: so.CrashWindow,
	}
}

// Description is what a plugin process said of itself when it started.
type Description struct {
	Name    string
	Version string
	// Events are the events it handles, as it listed them.
	Events []hooks.EventID
}

// Process is a plugin process as the host supervises it.
type Process struct {
	sup *pluginhost.Supervisor
}

// Description returns what the running process described itself as.
func (p *Process) Description() Description {
	d := p.sup.Description()
	return Description{Name: d.Name, Version: d.Version, Events: d.Events}
}

// Ping checks the process answers, as the host's health check does.
func (p *Process) Ping(ctx context.Context) error { return p.sup.Ping(ctx) }

// Pid returns the running process's pid, or 0.
func (p *Process) Pid() int { return p.sup.Pid() }

// Stop stops the process as the host does, gracefully then by force;
// the harness's own cleanup then has nothing left to stop.
func (p *Process) Stop(ctx context.Context) { p.sup.Stop(ctx) }
