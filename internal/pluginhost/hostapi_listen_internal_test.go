package pluginhost

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestListenPrivate: the host API listener of a plugin without go-plugin's
// broker and without a socket directory (an attached plugin) is a socket
// in a directory only this user can enter, gone once the listener is
// closed.
func TestListenPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("loopback TCP on Windows")
	}
	ln, err := listenPrivate("")
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

// TestListenPrivateInSocketDir: a started plugin's private host API socket
// lives in the directory go-plugin made for the plugin's sockets, so that
// whoever removes that directory (the host stopping the plugin, or the
// plugin once its host is gone) removes the socket too: nothing of its own
// is left behind when the host is killed.
func TestListenPrivateInSocketDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("loopback TCP on Windows")
	}
	dir := t.TempDir()
	ln, err := listenPrivate(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := filepath.Dir(ln.Addr().String()); got != dir {
		t.Fatalf("socket in %s, want in the plugin's socket directory %s", got, dir)
	}
}
