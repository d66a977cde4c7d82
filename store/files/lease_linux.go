package files

import (
	"errors"

	"golang.org/x/sys/unix"
)

// soleOpener reports whether this process's handle is the only open file
// of h's file, system-wide. It asks for a write lease, which Linux grants
// only then, and drops it at once. supported is false where no lease can
// be had (not the file's owner without CAP_LEASE, leases disabled, a file
// system without them, a handle without a descriptor).
func soleOpener(h Handle) (sole, supported bool) {
	f, ok := h.(interface{ Fd() uintptr })
	if !ok {
		return false, false
	}
	fd := int(f.Fd())
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK)
	switch {
	case err == nil:
		unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
		return true, true
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EBUSY):
		return false, true
	}
	return false, false
}
