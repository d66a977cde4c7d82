//go:build linux

package regularfiletest

import "golang.org/x/sys/unix"

// mknull makes a character device with /dev/null's numbers (1, 3).
func mknull(path string) error {
	return unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
}
