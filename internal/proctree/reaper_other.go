//go:build !linux

package proctree

import "os/exec"

// Subreap does nothing where there is no child subreaper (Linux's
// PR_SET_CHILD_SUBREAPER) and reports false: a double-forked process of a
// plugin escapes, as the package documentation says.
func Subreap() bool { return false }

// SubreapOnFirstStart does nothing here.
func SubreapOnFirstStart() {}

// Subreaping reports false here.
func Subreaping() bool { return false }

// Start starts cmd.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

// Waited does nothing here.
func Waited(int) {}

// EndOrphans does nothing here.
func EndOrphans() {}
