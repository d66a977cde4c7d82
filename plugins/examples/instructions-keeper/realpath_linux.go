package main

import (
	"os"
	"strconv"
)

// realPath is the path of the directory (or file) f has open, with every
// link resolved, as the kernel has it: what f is, not what its name now
// leads to.
func realPath(f *os.File) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(f.Fd()), 10))
}
