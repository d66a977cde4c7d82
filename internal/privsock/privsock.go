// Package privsock makes a unix socket in a private directory of its own:
// the directory (mode 0700, so that no other user can connect) is made
// under a base directory and removed when the listener is closed. The
// host's API listener for an attached plugin and a Go SDK plugin serving
// without a directory from its host (debug mode, in-process) both use it.
package privsock

import (
	"net"
	"os"
	"path/filepath"
)

// Listen makes a new directory under base ("": the temporary directory)
// named by pattern as os.MkdirTemp names it, and listens on the unix
// socket name in it. Closing the listener removes the directory.
func Listen(base, pattern, name string) (net.Listener, error) {
	dir, err := os.MkdirTemp(base, pattern)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", filepath.Join(dir, name))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &listener{Listener: l, dir: dir}, nil
}

// listener removes its directory when closed.
type listener struct {
	net.Listener
	dir string
}

func (l *listener) Close() error {
	err := l.Listener.Close()
	_ = os.RemoveAll(l.dir)
	return err
}
