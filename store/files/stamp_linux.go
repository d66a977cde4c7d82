package files

import (
	"io/fs"
	"syscall"
)

// changeStamp is the file's change time (ctime) in nanoseconds: every
// write to the file moves it, and unlike the modification time no one can
// set it back (cp -p, touch -r). 0 when the system does not say.
func changeStamp(fi fs.FileInfo) int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.ModTime().UnixNano()
	}
	return st.Ctim.Nano()
}
