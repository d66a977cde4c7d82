//go:build !linux

package main

import (
	"os"
	"path/filepath"
)

// realPath is the path of the directory (or file) f has open, with every
// link resolved. Without Linux's /proc/self/fd it is resolved from f's
// name, which a swap after the open could change.
func realPath(f *os.File) (string, error) {
	return filepath.EvalSymlinks(f.Name())
}
