package proctree

import (
	"errors"

	"golang.org/x/sys/unix"
)

// OnExit calls fn once the child pid has exited, without reaping it: the
// caller's own wait (os/exec) still gets its status. It must be called
// before that wait can have reaped pid, such as right after the start; it
// reports false, and never calls fn, where it cannot watch (kernels before
// pidfds, 5.4).
//
// It holds a pidfd, which names that very process even once its pid is
// free again, and a thread blocked in waitid until the exit.
func OnExit(pid int, fn func()) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	// Check once that waitid takes a pidfd (5.4) before relying on it.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil && !errors.Is(err, unix.ECHILD) {
		unix.Close(fd)
		return false
	}
	go func() {
		defer unix.Close(fd)
		for {
			err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				break // exited (a zombie still), or already reaped (ECHILD)
			}
		}
		fn()
	}()
	return true
}
