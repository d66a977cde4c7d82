// Package regularfiletest puts what is not a regular file where a test
// expects one — a FIFO, a directory, a device — and runs an open that
// must not hang with a safety net, for the tests of every entry point
// that opens a session through internal/regularfile.
package regularfiletest

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// Kinds are what Make can put in a file's place.
var Kinds = []string{"FIFO", "directory", "device"}

// Make puts a thing of kind at path: a FIFO with no writer (an open
// without O_NONBLOCK waits for one forever), an empty directory, or a
// character device equal to /dev/null made in place (mknod: needs the
// privilege; a symlink to /dev/null would test the symlink policy
// instead). ok is false when this system or user cannot make one.
func Make(kind, path string) (ok bool, err error) {
	switch kind {
	case "FIFO":
		if err := mkfifo(path); err != nil {
			return false, nil
		}
	case "directory":
		if err := os.Mkdir(path, 0o700); err != nil {
			return false, err
		}
	case "device":
		if err := mknull(path); err != nil {
			return false, nil
		}
	default:
		return false, fmt.Errorf("regularfiletest: no kind %q", kind)
	}
	return true, nil
}

// Replace removes the regular file at path and makes kind in its place.
func Replace(kind, path string) (ok bool, err error) {
	if err := os.Remove(path); err != nil {
		return false, err
	}
	return Make(kind, path)
}

// MustMake is Make for a test: an error fails it, a kind the system
// cannot make skips it.
func MustMake(t testing.TB, kind, path string) {
	t.Helper()
	ok, err := Make(kind, path)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skipf("cannot make a %s here", kind)
	}
}

// NoHang runs f and returns its error. A FIFO opened without O_NONBLOCK
// blocks f forever; the deadline turns that hang into a failure naming
// what, and is a safety net, not a timing assertion (an open refused at
// once takes microseconds).
func NoHang(t testing.TB, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s hangs", what)
		return nil
	}
}
