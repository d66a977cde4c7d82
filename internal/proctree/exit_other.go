//go:build !linux

package proctree

// OnExit cannot watch a child's exit without reaping it here: it reports
// false and never calls fn.
func OnExit(int, func()) bool { return false }
