//go:build linux

package pluginhost

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity is what changes when the file at path is rewritten or
// replaced: device, inode, size, modification and change times (the
// change time cannot be set back by its owner), or "" when unknown.
func fileIdentity(path string) string {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d:%d.%d", st.Dev, st.Ino, st.Size, fi.ModTime().UnixNano(), st.Ctim.Sec, st.Ctim.Nsec)
}

// privateFile reports whether a cache file is this user's and writable by
// nobody else: another user's file could claim that a plugin handles
// nothing.
func privateFile(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid() && fi.Mode().Perm()&0o022 == 0
}
