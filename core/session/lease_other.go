//go:build !linux

package session

// soleOpener cannot tell here whether other processes have the file open.
func soleOpener(Handle) (sole, supported bool) { return false, false }
