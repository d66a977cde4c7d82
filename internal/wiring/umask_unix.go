//go:build unix

package wiring

import "syscall"

// withUmask runs fn with the process umask set to mask.
func withUmask(mask int, fn func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	fn()
}
