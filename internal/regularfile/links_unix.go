//go:build unix

package regularfile

import (
	"io/fs"
	"syscall"
)

// LinkCount is the number of hard links of a file, when the system says.
func LinkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
