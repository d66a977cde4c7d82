//go:build unix

package sdk

import (
	"errors"
	"syscall"
)

// alive reports whether a process with pid exists (a zombie counts as alive
// until reaped, which is why the ppid check comes first).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
