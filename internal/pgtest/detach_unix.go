//go:build unix

package pgtest

import "syscall"

// detached puts the watchdog in its own session, out of reach of signals
// sent to the test's process group.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
