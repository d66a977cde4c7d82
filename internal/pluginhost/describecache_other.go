//go:build !linux

package pluginhost

import "os"

// fileIdentity is unknown here: without a configured sha256 a binary is
// not looked up in the describe cache.
func fileIdentity(string) string { return "" }

// privateFile cannot tell the file's owner here: the cache is not read.
func privateFile(os.FileInfo) bool { return false }
