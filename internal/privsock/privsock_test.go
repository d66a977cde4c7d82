//go:build unix

package privsock_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/privsock"
)

// TestListenPrivateAndRemoved: the socket is in a new directory only its
// owner may enter, a client connects to it, and closing the listener
// leaves nothing under base.
func TestListenPrivateAndRemoved(t *testing.T) {
	base := t.TempDir()
	l, err := privsock.Listen(base, "p-", "s")
	if err != nil {
		t.Fatal(err)
	}
	path := l.Addr().String()
	dir := filepath.Dir(path)
	if filepath.Dir(dir) != base || !strings.HasPrefix(filepath.Base(dir), "p-") {
		t.Fatalf("socket %s is not in a new p-* directory under %s", path, base)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Fatalf("directory mode %v, want 0700", perm)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("directory left after Close: %v", err)
	}
}

// TestListenFailureLeavesNothing: a socket that cannot be made (a name
// past the unix socket path limit) leaves no directory behind.
func TestListenFailureLeavesNothing(t *testing.T) {
	base := t.TempDir()
	if l, err := privsock.Listen(base, "p-", strings.Repeat("n", 200)); err == nil {
		l.Close()
		t.Fatal("a 200-byte socket name was accepted")
	}
	left, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("left under base: %v", left)
	}
}
