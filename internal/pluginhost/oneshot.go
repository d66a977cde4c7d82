package pluginhost

import (
	"context"
	"sync"
)

// oneShot is the lifecycle of a plugin that serves one operation (a CLI
// command) rather than a daemon: its binary checked and its process
// started in the background, so that the operation's own work overlaps
// them, waited for only when the operation needs it, and stopped in the
// background as soon as the operation is done with it.
type oneShot struct {
	checkOnce sync.Once
	checked   chan struct{} // closed once the binary's check has returned
	checkErr  error

	mu        sync.Mutex
	cancel    context.CancelFunc // ends a start still under way
	startOnce sync.Once
	started   chan struct{} // closed once the start has returned (or never will run)
	startErr  error

	stopOnce sync.Once
	stopped  chan struct{}
}

func (o *oneShot) init() {
	o.checked = make(chan struct{})
	o.started = make(chan struct{})
	o.stopped = make(chan struct{})
}

// CheckInBackground checks the plugin's binary (Prepare) once, in the
// background; Checked waits for the answer. A mismatch must stop an
// operation whatever the failure policy, so it is checked before the
// operation even for a plugin started later.
func (s *Supervisor) CheckInBackground() {
	s.once.checkOnce.Do(func() {
		go func() {
			defer close(s.once.checked)
			s.once.checkErr = s.Prepare()
		}()
	})
}

// Checked waits for the check CheckInBackground began and returns its
// error, which wraps ErrChecksumMismatch for a binary that does not match.
func (s *Supervisor) Checked() error {
	s.CheckInBackground()
	<-s.once.checked
	return s.once.checkErr
}

// StartInBackground starts the plugin once, in the background, after its
// binary's check; ctx bounds the start, and StopInBackground cuts it
// short. A start that fails is logged, once, unless it was cut short.
func (s *Supervisor) StartInBackground(ctx context.Context) {
	s.CheckInBackground()
	s.once.startOnce.Do(func() {
		sctx, cancel := context.WithCancel(ctx)
		s.once.mu.Lock()
		s.once.cancel = cancel
		s.once.mu.Unlock()
		go func() {
			defer close(s.once.started)
			<-s.once.checked
			if s.once.checkErr != nil {
				s.once.startErr = s.once.checkErr // Checked reports it
				return
			}
			if err := s.Start(sctx); err != nil {
				s.once.startErr = err
				if sctx.Err() == nil {
					s.opts.Logger.Error("plugin not started", "plugin", s.spec.Name, "error", err)
				}
			}
		}()
	})
}

// Started is closed once the start StartInBackground began has returned,
// or once StopInBackground has made sure it never will run.
func (s *Supervisor) Started() <-chan struct{} { return s.once.started }

// StartErr is the error of the background start, once Started is closed.
func (s *Supervisor) StartErr() error { return s.once.startErr }

// StopInBackground ends the plugin once, in the background: a start under
// way is cut short at Describe (the process start and handshake are
// bounded by Options.StartTimeout), then the plugin is stopped as at the
// end of a command (StopNow: Shutdown, so its Close runs, then its process
// group is killed and reaped). Stopped is closed once it is done.
func (s *Supervisor) StopInBackground() {
	s.once.stopOnce.Do(func() {
		go func() {
			defer close(s.once.stopped)
			s.once.startOnce.Do(func() { close(s.once.started) }) // never started: nothing to wait for
			s.once.checkOnce.Do(func() { close(s.once.checked) }) // never checked: nothing to wait for
			s.once.mu.Lock()
			if s.once.cancel != nil {
				s.once.cancel()
			}
			s.once.mu.Unlock()
			<-s.once.started
			<-s.once.checked // its open binary is closed by StopNow
			s.StopNow(context.Background())
		}()
	})
}

// Stopped is closed once the stop StopInBackground began is done.
func (s *Supervisor) Stopped() <-chan struct{} { return s.once.stopped }
