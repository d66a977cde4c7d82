//go:build !unix

package server

import "io/fs"

// fileKey identifies a file; without inode numbers, by its name.
type fileKey struct{ name string }

func keyOf(_ fs.FileInfo, rel string) fileKey { return fileKey{name: rel} }
