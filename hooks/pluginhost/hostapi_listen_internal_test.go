package pluginhost

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestListenPrivate: the host API listener of a plugin without go-plugin's
// broker is a socket in a directory only this user can enter, gone once
// the listener is closed.
func TestListenPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("loopback TCP on Windows")
	}
	ln, err := listenPrivate()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(ln.Addr().String())
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode %v, want 0700", fi.Mode().Perm())
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("socket directory left after Close: %v", err)
	}
}
