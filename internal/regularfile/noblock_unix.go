//go:build unix

package regularfile

import "syscall"

// NoBlock keeps the open of a FIFO from waiting for a writer (and that of
// a device from waiting for carrier); a regular file ignores it.
const NoBlock = syscall.O_NONBLOCK
