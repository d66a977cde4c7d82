//go:build !unix

package regularfile

import "io/fs"

// LinkCount is the number of hard links of a file, when the system says;
// here it does not.
func LinkCount(fs.FileInfo) (uint64, bool) { return 0, false }
