package proctree

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// TestOnExit: the watch fires once the child has exited — also when it
// had exited before the watch began — and leaves it unreaped, so that the
// owner's wait still gets its exit status.
func TestOnExit(t *testing.T) {
	for _, script := range []string{"sleep 0.2; exit 3", "exit 3"} {
		cmd := exec.Command("sh", "-c", script)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if script == "exit 3" {
			time.Sleep(50 * time.Millisecond) // most likely a zombie by now; either way must work
		}
		fired := make(chan struct{})
		if !OnExit(cmd.Process.Pid, func() { close(fired) }) {
			_ = cmd.Wait()
			t.Skip("SKIP: no pidfds on this kernel")
		}
		select {
		case <-fired:
		case <-time.After(time.Minute): // a safety net, not a measurement
			t.Fatalf("%q: the watch never fired", script)
		}
		var exit *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("%q: the owner's wait got %v, want exit status 3", script, err)
		}
	}
}
