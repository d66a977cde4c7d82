//go:build !linux

package files

// soleOpener cannot tell here whether other processes have the file open.
func soleOpener(Handle) (sole, supported bool) { return false, false }
