//go:build unix && !linux

package proctree

import "syscall"

// SysProcAttr starts a child as the leader of a new process group. There is
// no parent-death signal outside Linux; the SDK's watchdog polls instead.
func SysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Descendants is not available without /proc; the group kill covers the
// children that stayed in the group.
func Descendants(int) []int { return nil }
