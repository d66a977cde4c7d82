// Package testtmp gives tests a temporary directory short enough to hold
// unix sockets, for use as the TMPDIR of a process that makes them.
//
// A test that kills a host or a plugin on purpose (SIGKILL) leaves what
// that process would have removed on a normal exit: go-plugin's
// plugin-dir* socket directory, a plugin's own socket directory. Giving
// such a process a TMPDIR of its own, removed when the test ends, keeps
// those leftovers out of the system's temporary directory.
//
// t.TempDir() is not used for this: its path carries the test's name and
// is often too long for a socket below it (108 bytes on Linux, 104 on
// macOS, counting the directory go-plugin adds); the host then falls
// back to /tmp and the leftovers land there after all.
package testtmp

import (
	"os"
	"testing"
)

// Short returns a new directory directly under the system's temporary
// directory, removed with all it holds when the test and its subtests
// end. Call it before starting the processes that use it, so that the
// removal runs after their own cleanups (t.Cleanup runs last-in,
// first-out).
func Short(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove the test's temporary directory: %v", err)
		}
	})
	return dir
}
