//go:build !unix

package files

import "io/fs"

// Key identifies a session file; without inode numbers, by its name.
type Key struct{ name string }

// KeyOf is the Key of the file fi, found by the name rel.
func KeyOf(_ fs.FileInfo, rel string) Key { return Key{name: rel} }
