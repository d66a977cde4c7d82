package pluginhost_test

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// TestSupervisorStartInBackground: the background start runs once, is
// waited for through Started, and the background stop ends it.
func TestSupervisorStartInBackground(t *testing.T) {
	s := pluginhost.NewSupervisor(spec("bg", 10, "-compacting", "context"), pluginhost.Options{Logger: hclog.NewNullLogger()})
	s.StartInBackground(context.Background())
	s.StartInBackground(context.Background()) // once
	<-s.Started()
	if err := s.StartErr(); err != nil || s.State() != pluginhost.StateRunning {
		t.Fatalf("after the background start: %s, %v; want running", s.State(), err)
	}
	s.StopInBackground()
	<-s.Stopped()
	if st := s.State(); st != pluginhost.StateStopped {
		t.Fatalf("after the background stop: %s", st)
	}
}

// TestSupervisorStopInBackgroundBeforeStart: a plugin stopped before it
// was ever started never starts, and its check and start are not waited
// for.
func TestSupervisorStopInBackgroundBeforeStart(t *testing.T) {
	s := pluginhost.NewSupervisor(spec("never", 10), pluginhost.Options{Logger: hclog.NewNullLogger()})
	s.StopInBackground()
	<-s.Stopped()
	<-s.Started()
	s.StartInBackground(context.Background())
	if st := s.State(); st != pluginhost.StateStopped {
		t.Fatalf("state %s, want stopped", st)
	}
}

// TestSupervisorCheckedReportsMismatch: the background check reports a
// binary that does not match its sha256, and the start then fails with it.
func TestSupervisorCheckedReportsMismatch(t *testing.T) {
	sp := spec("bad", 10)
	sp.SHA256 = "0000000000000000000000000000000000000000000000000000000000000000"
	s := pluginhost.NewSupervisor(sp, pluginhost.Options{Logger: hclog.NewNullLogger()})
	t.Cleanup(func() { s.StopInBackground(); <-s.Stopped() })
	s.CheckInBackground()
	if err := s.Checked(); pluginhost.Mismatch(err) == nil {
		t.Fatalf("Checked = %v, want a checksum mismatch", err)
	}
	s.StartInBackground(context.Background())
	<-s.Started()
	if pluginhost.Mismatch(s.StartErr()) == nil {
		t.Fatalf("StartErr = %v, want the mismatch", s.StartErr())
	}
}
