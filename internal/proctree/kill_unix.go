//go:build unix

package proctree

import (
	"os"
	"syscall"
)

// Kill ends the process group led by leader and the processes in extra
// (descendants collected before the leader died, which may have left the
// group) with SIGKILL. Errors are ignored: a process may be gone already.
// The group is killed only when leader still leads one, so that a plugin
// started by an older host, still in the host's group, cannot take the
// host down with it.
func Kill(leader int, extra []int) {
	if leader > 0 {
		if pgid, err := syscall.Getpgid(leader); err != nil || pgid == leader {
			// ESRCH: the leader is gone, but its group may live on in
			// children; the group id cannot be reused while it does.
			_ = syscall.Kill(-leader, syscall.SIGKILL)
		}
	}
	for _, p := range extra {
		if p > 0 && p != os.Getpid() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// KillSelfTree ends every process descended from this one, then this
// process's own group when it leads one (which ends this process too).
// The SDK calls it when the host is gone.
func KillSelfTree() {
	self := os.Getpid()
	Kill(0, Descendants(self))
	if syscall.Getpgrp() == self {
		_ = syscall.Kill(-self, syscall.SIGKILL)
	}
}
