//go:build unix

package main

import "syscall"

// ownSession starts a child in a session of its own when setsid is set.
func ownSession(setsid bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: setsid} }
