package pluginhost

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"google.golang.org/grpc"
)

var (
	// ErrChecksumMismatch: the binary does not match the configured sha256;
	// the plugin is not started, and its calls fail whatever its failure
	// policy (dispatch.ErrChecksumMismatch).
	ErrChecksumMismatch = dispatch.ErrChecksumMismatch
	// ErrPluginDisabled: the plugin crashed too often and is not restarted.
	ErrPluginDisabled = errors.New("plugin disabled after repeated crashes")
	// ErrPluginStopped: the supervisor was stopped.
	ErrPluginStopped = errors.New("plugin stopped")
	// ErrNotStarted: the supervisor was never started successfully.
	ErrNotStarted = errors.New("plugin not started")
	// ErrPluginExited: the plugin process died during the call.
	ErrPluginExited = errors.New("plugin process exited")
)

// Options tune supervisors; zero values mean the defaults.
type Options struct {
	// Logger is the host's logger; each plugin logs under Named(name).
	Logger hclog.Logger
	// Host is served to plugins over the broker; nil makes their host
	// calls fail with Unavailable.
	Host        hooks.HostAPI
	HostVersion string
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
	// Observe, when set, is told of crashes, restarts and disabling (see
	// Observation), so metrics need not read the log. It must not block.
	Observe func(Observation)
}

func (o Options) loggerOrNull() hclog.Logger {
	if o.Logger == nil {
		return hclog.NewNullLogger()
	}
	return o.Logger
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	if o.HealthInterval == 0 {
		o.HealthInterval = 10 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 200 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.CrashBudget <= 0 {
		o.CrashBudget = 3
	}
	if o.CrashWindow <= 0 {
		o.CrashWindow = 5 * time.Minute
	}
	return o
}

// State is a supervisor's lifecycle state.
type State int

// Supervisor states.
const (
	StateNew        State = iota // not started yet
	StateRunning                 // process up, Describe done
	StateRestarting              // crashed, waiting for the backoff or starting again
	StateDisabled                // crash budget exhausted
	StateStopped                 // stopped by the host
)

func (s State) String() string {
	return [...]string{"new", "running", "restarting", "disabled", "stopped"}[s]
}

// Description is what a plugin reported in Describe.
type Description struct {
	Name    string
	Version string
	Events  []hooks.EventID
}

// exitPoll is how often a running instance is checked for an exited process.
const exitPoll = 50 * time.Millisecond

// exitGrace is how long a call that lost its transport waits to see the
// process exit before reporting a plain error.
const exitGrace = time.Second

// Supervisor runs one plugin and is its hooks.Plugin.
type Supervisor struct {
	spec Spec
	opts Options
	log  hclog.Logger
	info atomic.Pointer[hooks.PluginInfo]
	desc atomic.Pointer[Description]
	// grants are the host-API capabilities of the calls in flight.
	grants grants
	// noBroker: the plugin serves no go-plugin broker (serveHostAPI).
	noBroker atomic.Bool

	mu       sync.Mutex
	state    State
	starting bool // Start is launching the first instance
	inst     *instance
	changed  chan struct{} // closed and replaced on every state change
	crashes  []time.Time
	// crashCount and lastCrash are every crash since the supervisor was
	// made and why the last one happened (Crashes), for status pages.
	crashCount int
	lastCrash  string
	stopCh     chan struct{}
	wg         sync.WaitGroup
	// prepared is a binary already opened and checked (Prepare), used by
	// the first start instead of checking it again.
	prepared *binary
	// disabledBy is why a restart disabled the plugin at once: its binary
	// no longer matches its sha256; calls fail with it (acquire).
	disabledBy error
	// once is the start and stop of a plugin that serves one operation
	// (StartInBackground, StopInBackground).
	once oneShot
}

// instance is one started process; every (re)start makes a new one with a
// fresh plugin.Client, as go-plugin requires.
type instance struct {
	client *plugin.Client
	rpc    pb.HooksClient
	pid    int
	done   chan struct{}
	logs   []*logWriter
	relay  *relayLimit
	once   sync.Once
	// said is what the process last wrote on stderr, and cmd the process
	// (nil for an attached plugin): the report of a crash gives both.
	said *lastWords
	cmd  *exec.Cmd
	// attached: the process was started by hand (debug mode) and is not
	// the host's to signal or restart.
	attached bool
	// peerCert is the certificate the plugin presented over TLS.
	peerCert atomic.Pointer[x509.Certificate]
	// socketDir is the private directory (mode 0700) go-plugin made for
	// the process's sockets, removed when the instance is killed; "" for
	// an attached plugin.
	socketDir string
	// hostAPI is the server of the host API for this instance, from
	// describe until the instance is ended, which stops it.
	hostAPI atomic.Pointer[hostAPIEndpoint]
	// runner runs the process (nil for an attached plugin): set when
	// go-plugin starts it.
	runner atomic.Pointer[processRunner]
}

func (in *instance) retire() { in.once.Do(func() { close(in.done) }) }

// NewSupervisor returns a supervisor for spec; Start launches the plugin.
func NewSupervisor(spec Spec, opts Options) *Supervisor {
	opts = opts.withDefaults()
	s := &Supervisor{
		spec:    spec,
		opts:    opts,
		log:     opts.Logger.Named(spec.Name),
		changed: make(chan struct{}),
		stopCh:  make(chan struct{}),
	}
	info := spec.info()
	s.info.Store(&info)
	s.desc.Store(&Description{})
	s.once.init()
	return s
}

// Spec returns the spec the supervisor was made with.
func (s *Supervisor) Spec() Spec { return s.spec }

// SetInfo updates priority, order, timeout and failure policy in place.
func (s *Supervisor) SetInfo(spec Spec) {
	info := spec.info()
	s.info.Store(&info)
}

// State returns the current state.
func (s *Supervisor) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Description returns what the plugin last reported in Describe.
func (s *Supervisor) Description() Description { return *s.desc.Load() }

// Pid returns the running process's pid, or 0.
func (s *Supervisor) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil {
		return 0
	}
	return s.inst.pid
}

// Start launches the plugin and waits for its Describe answer.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.state != StateNew || s.starting {
		st := s.state
		s.mu.Unlock()
		return fmt.Errorf("plugin %q: start in state %s", s.spec.Name, st)
	}
	s.starting = true
	s.mu.Unlock()
	inst, err := s.launch(ctx)
	s.mu.Lock()
	s.starting = false
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if s.state == StateStopped {
		s.mu.Unlock()
		s.shutdown(context.Background(), inst)
		return fmt.Errorf("plugin %q: %w while starting", s.spec.Name, ErrPluginStopped)
	}
	s.running(inst)
	s.mu.Unlock()
	return nil
}

// WaitRunning blocks until the plugin is running, or fails when it is
// disabled or stopped or ctx ends.
func (s *Supervisor) WaitRunning(ctx context.Context) error {
	_, err := s.acquire(ctx)
	return err
}

// Stop asks the plugin to shut down (Shutdown RPC), then ends the process.
// It waits for the process to exit; ctx bounds the polite part.
func (s *Supervisor) Stop(ctx context.Context) { s.stop(ctx, killInstance) }

// StopNow is Stop for a host process about to exit: once the plugin has
// answered the Shutdown RPC (its Close has run) or ctx has ended, its
// process group is killed at once instead of being given go-plugin's
// graceful exit (up to 2 s); only the dead process is reaped, so that none
// is seen running after the host.
func (s *Supervisor) StopNow(ctx context.Context) { s.stop(ctx, killInstanceNow) }

func (s *Supervisor) stop(ctx context.Context, kill func(*instance)) {
	s.mu.Lock()
	if bin := s.prepared; bin != nil {
		s.prepared = nil
		bin.close()
	}
	if s.state == StateStopped {
		s.mu.Unlock()
		return
	}
	close(s.stopCh)
	inst := s.inst
	s.inst = nil
	s.setState(StateStopped)
	s.mu.Unlock()
	if inst != nil {
		s.requestShutdown(ctx, inst)
		kill(inst)
	}
	s.wg.Wait()
}

// shutdown asks inst to shut down, then ends it and waits for it.
func (s *Supervisor) shutdown(ctx context.Context, inst *instance) {
	s.requestShutdown(ctx, inst)
	killInstance(inst)
}

// requestShutdown retires inst and sends it the Shutdown RPC, so that the
// plugin's Close runs; ctx, and at most 2 s, bound the wait for its answer.
func (s *Supervisor) requestShutdown(ctx context.Context, inst *instance) {
	inst.retire()
	if !inst.client.Exited() {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if _, err := inst.rpc.Shutdown(sctx, &pb.ShutdownRequest{}); err != nil {
			s.log.Debug("shutdown request failed; killing", "error", err)
		}
		cancel()
	}
}

// setState must be called with s.mu held.
func (s *Supervisor) setState(st State) {
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
}

// running must be called with s.mu held.
func (s *Supervisor) running(inst *instance) {
	s.inst = inst
	s.setState(StateRunning)
	s.wg.Add(1)
	go s.monitor(inst)
}

// acquire returns the running instance, waiting through a restart.
func (s *Supervisor) acquire(ctx context.Context) (*instance, error) {
	for {
		s.mu.Lock()
		st, inst, ch, why := s.state, s.inst, s.changed, s.disabledBy
		s.mu.Unlock()
		switch st {
		case StateRunning:
			return inst, nil
		case StateDisabled:
			if why != nil {
				return nil, fmt.Errorf("%w: %w", ErrPluginDisabled, why)
			}
			return nil, fmt.Errorf("plugin %q: %w", s.spec.Name, ErrPluginDisabled)
		case StateStopped:
			return nil, fmt.Errorf("plugin %q: %w", s.spec.Name, ErrPluginStopped)
		case StateNew:
			return nil, fmt.Errorf("plugin %q: %w", s.spec.Name, ErrNotStarted)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("plugin %q is %s: %w", s.spec.Name, st, ctx.Err())
		}
	}
}

// monitor watches one instance: process exit and, periodically, Ping.
func (s *Supervisor) monitor(inst *instance) {
	defer s.wg.Done()
	exitTick := time.NewTicker(exitPoll)
	defer exitTick.Stop()
	var health <-chan time.Time
	// An attached plugin may sit at a breakpoint: not answering is not a
	// crash then.
	if s.opts.HealthInterval > 0 && !inst.attached {
		t := time.NewTicker(s.opts.HealthInterval)
		defer t.Stop()
		health = t.C
	}
	failedPings := 0
	for {
		select {
		case <-inst.done:
			return
		case <-exitTick.C:
			if inst.client.Exited() {
				s.crashed(inst, inst.crashReason("process exited"), false)
				return
			}
		case <-health:
			ctx, cancel := context.WithTimeout(context.Background(), min(s.opts.HealthInterval, 5*time.Second))
			_, err := inst.rpc.Ping(ctx, &pb.PingRequest{})
			cancel()
			if err == nil {
				failedPings = 0
				continue
			}
			failedPings++
			s.log.Warn("health check failed", "error", err, "consecutive", failedPings)
			if failedPings >= 2 {
				s.crashed(inst, "not answering health checks", false)
				return
			}
		}
	}
}

// crashed records a crash of inst and schedules a restart, or disables the
// plugin once the crash budget is spent. Reports about an instance that is
// no longer current are ignored, so a crash is counted once.
//
// A crash during a call (inCall) is reported by the call's error, which
// says why; the log says it at debug level only. A restart is announced
// when it happens (restart), not here: a one-shot command stops the
// plugin before its backoff has passed unless it needs it again.
func (s *Supervisor) crashed(inst *instance, why string, inCall bool) {
	s.mu.Lock()
	if s.inst != inst || s.state != StateRunning {
		s.mu.Unlock()
		return
	}
	s.inst = nil
	s.crashCount++
	s.lastCrash = why
	n := s.recordCrash()
	if inst.attached {
		// Started by hand, it is not the host's to start again.
		s.setState(StateDisabled)
		s.mu.Unlock()
		s.observe(ObservedCrash, inst.pid, errors.New(why))
		s.log.Error("attached plugin went away; not restarted: start it again in debug mode and reload the configuration", "reason", why)
		s.observe(ObservedDisabled, inst.pid, errors.New(why))
	} else if n >= s.opts.CrashBudget {
		s.setState(StateDisabled)
		s.mu.Unlock()
		s.observe(ObservedCrash, inst.pid, errors.New(why))
		s.log.Error(fmt.Sprintf("plugin crashed %d times within %s; disabled until the configuration is reloaded", n, s.opts.CrashWindow), "reason", why)
		s.observe(ObservedDisabled, inst.pid, errors.New(why))
	} else {
		delay := s.backoff(n)
		s.setState(StateRestarting)
		s.wg.Add(1)
		s.mu.Unlock()
		s.observe(ObservedCrash, inst.pid, errors.New(why))
		if inCall {
			s.log.Debug("plugin crashed during a call", "reason", why, "crashes", n)
		} else {
			s.log.Warn("plugin crashed", "reason", why, "crashes", n)
		}
		go s.restart(delay, why)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		inst.retire()
		killInstance(inst)
	}()
}

// Crashes is how many times the plugin's process crashed (each crash is
// followed by a restart, or disables the plugin past the budget) and why
// the last one happened, "" for never.
func (s *Supervisor) Crashes() (n int, last string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crashCount, s.lastCrash
}

// recordCrash must be called with s.mu held; it returns the crashes within
// the window, this one included.
func (s *Supervisor) recordCrash() int {
	now := time.Now()
	kept := s.crashes[:0]
	for _, t := range s.crashes {
		if now.Sub(t) < s.opts.CrashWindow {
			kept = append(kept, t)
		}
	}
	s.crashes = append(kept, now)
	return len(s.crashes)
}

func (s *Supervisor) backoff(n int) time.Duration {
	d := s.opts.MinBackoff
	for i := 1; i < n && d < s.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.opts.MaxBackoff)
}

func (s *Supervisor) restart(delay time.Duration, why string) {
	defer s.wg.Done()
	announced := false
	for {
		select {
		case <-s.stopCh:
			return
		case <-time.After(delay):
		}
		if !announced {
			announced = true
			s.log.Warn("plugin crashed; restarting it", "reason", why, "after", delay)
		}
		inst, err := s.launch(context.Background())
		s.mu.Lock()
		if s.state == StateStopped {
			s.mu.Unlock()
			if inst != nil {
				s.shutdown(context.Background(), inst)
			}
			return
		}
		if err == nil {
			s.running(inst)
			s.mu.Unlock()
			s.log.Info("plugin restarted", "pid", inst.pid)
			s.observe(ObservedRestart, inst.pid, nil)
			return
		}
		if errors.Is(err, ErrChecksumMismatch) {
			// The file was replaced: trying again runs into the same
			// bytes. Its calls now fail, and stop their operations
			// whatever the failure policy, until a reload.
			s.disabledBy = err
			s.setState(StateDisabled)
			s.mu.Unlock()
			s.log.Error("plugin binary changed; disabled until the configuration is reloaded", "error", err)
			s.observe(ObservedDisabled, 0, err)
			return
		}
		n := s.recordCrash()
		if n >= s.opts.CrashBudget {
			s.setState(StateDisabled)
			s.mu.Unlock()
			s.log.Error(fmt.Sprintf("plugin failed to restart and crashed %d times within %s; disabled until the configuration is reloaded", n, s.opts.CrashWindow), "error", err)
			s.observe(ObservedDisabled, 0, err)
			return
		}
		delay = s.backoff(n)
		s.mu.Unlock()
		s.log.Warn("plugin failed to restart; retrying", "error", err, "in", delay)
		s.observe(ObservedRestartFailed, 0, err)
	}
}

// hostPlugin is the go-plugin glue on the host side.
type hostPlugin struct {
	plugin.NetRPCUnsupportedPlugin
}

// remote is what Dispense returns: the Hooks client and the broker.
type remote struct {
	rpc    pb.HooksClient
	broker *plugin.GRPCBroker
}

func (hostPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("pluginhost: the host does not serve the Hooks service")
}

func (hostPlugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &remote{rpc: pb.NewHooksClient(conn), broker: broker}, nil
}
