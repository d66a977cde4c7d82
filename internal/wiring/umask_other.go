//go:build !unix

package wiring

// withUmask runs fn; without umask the socket's mode is set by the chmod
// that follows.
func withUmask(_ int, fn func()) { fn() }
