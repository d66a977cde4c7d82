//go:build !unix

package proctree

import "syscall"

// SysProcAttr has nothing to add where there are no process groups.
func SysProcAttr() *syscall.SysProcAttr { return nil }

// Descendants is not available on this platform.
func Descendants(int) []int { return nil }

// Kill does nothing here; go-plugin's own Kill ends the plugin process.
func Kill(int, []int) {}

// KillSelfTree does nothing here.
func KillSelfTree() {}
