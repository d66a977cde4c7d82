//go:build unix

package files

import (
	"io/fs"
	"syscall"
)

// Key identifies a session file, so that two names of one file (a hard
// link, a symlinked directory inside the root) share one open session:
// comparable, for a map of open sessions.
type Key struct {
	dev, ino uint64
	name     string
}

// KeyOf is the Key of the file fi, found by the name rel.
func KeyOf(fi fs.FileInfo, rel string) Key {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return Key{dev: uint64(st.Dev), ino: st.Ino}
	}
	return Key{name: rel}
}
