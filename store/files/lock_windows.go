//go:build windows

package files

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile locks the whole file with LockFileEx, the Windows counterpart
// of flock: mandatory there, but only Pith's writers take it.
func lockFile(f *os.File, exclusive bool) error {
	var flags uint32
	if exclusive {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := new(windows.Overlapped)
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, ^uint32(0), ^uint32(0), ol)
}

func unlockFile(f *os.File) error {
	ol := new(windows.Overlapped)
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, ^uint32(0), ^uint32(0), ol)
}

func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

func fileInode(fi fs.FileInfo) (uint64, bool) { return 0, false }
