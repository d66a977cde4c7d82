//go:build unix

package storetest

import (
	"os"
	"syscall"
	"testing"
)

// GrowSparse makes the file at path size bytes long without writing
// them, as another program growing a session by gigabytes would, at no
// cost in disk: the test is skipped where the file system does not keep
// the file sparse.
func GrowSparse(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if sys, ok := fi.Sys().(*syscall.Stat_t); !ok || sys.Blocks*512 > 1<<20 {
		t.Skip("the file system does not keep the file sparse")
	}
}
