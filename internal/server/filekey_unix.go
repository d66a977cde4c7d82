//go:build unix

package server

import (
	"io/fs"
	"syscall"
)

// fileKey identifies a file, so that two names of one file (through a
// symlinked directory inside the root) share one open session.
type fileKey struct {
	dev, ino uint64
	name     string
}

func keyOf(fi fs.FileInfo, rel string) fileKey {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileKey{dev: uint64(st.Dev), ino: st.Ino}
	}
	return fileKey{name: rel}
}
