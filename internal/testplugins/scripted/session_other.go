//go:build !unix

package main

import "syscall"

// ownSession: sessions are a Unix notion; elsewhere the child starts as is.
func ownSession(bool) *syscall.SysProcAttr { return nil }
