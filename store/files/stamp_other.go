//go:build !linux

package files

import "io/fs"

// changeStamp is the file's modification time elsewhere: the field every
// system fills in (a write moves it, but a copy that keeps times can set
// it back; Linux uses the change time, which cannot be).
func changeStamp(fi fs.FileInfo) int64 { return fi.ModTime().UnixNano() }
