package pluginhost

// ObservationKind names what happened to a plugin process.
type ObservationKind string

// The observations a supervisor reports through Options.Observe.
const (
	// ObservedCrash: the plugin exited or stopped answering health checks.
	ObservedCrash ObservationKind = "crash"
	// ObservedRestart: the plugin was started again after a crash.
	ObservedRestart ObservationKind = "restart"
	// ObservedRestartFailed: a restart attempt failed; another follows.
	ObservedRestartFailed ObservationKind = "restart_failed"
	// ObservedDisabled: the crash budget is spent; the plugin stays down
	// until the configuration is reloaded.
	ObservedDisabled ObservationKind = "disabled"
)

// Observation is one event in a plugin's life, for metrics and the like.
// Err is set for a crash (its reason) and a failed restart.
type Observation struct {
	Plugin string
	Kind   ObservationKind
	PID    int
	Err    error
}

// observe reports o through Options.Observe, if set. It runs on the
// supervisor's goroutine without its lock held; a callback must not block.
func (s *Supervisor) observe(kind ObservationKind, pid int, err error) {
	if s.opts.Observe != nil {
		s.opts.Observe(Observation{Plugin: s.spec.Name, Kind: kind, PID: pid, Err: err})
	}
}
