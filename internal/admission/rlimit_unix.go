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
	// The field is unsigned on Linux and signed on the BSDs, where a
	// negative value is no limit this can report.
	return uint64(max(lim.Cur, 0))
}
