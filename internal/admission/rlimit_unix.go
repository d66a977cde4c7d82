//go:build unix

package admission

import "syscall"

// DescriptorLimit is the soft RLIMIT_NOFILE in force: what the process
// may have open at once. Go raises it at start to the hard limit (less
// one, by which the runtime tells whether someone changed it since,
// syscall/rlimit.go), so no code of Pith's has to; 0 when unknown.
func DescriptorLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Cur
}
