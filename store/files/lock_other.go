//go:build !unix && !windows

package files

import (
	"errors"
	"io/fs"
	"os"
)

var errLockUnsupported = errors.New("file locking is not supported on this system")

func lockFile(f *os.File, exclusive bool) error { return errLockUnsupported }
func unlockFile(f *os.File) error               { return nil }

func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

func fileInode(fi fs.FileInfo) (uint64, bool) { return 0, false }
