//go:build unix

package sdk

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// listen makes the socket a plugin serves on: a unix socket in dir, the
// private directory (mode 0700) the host made for this plugin
// (PLUGIN_UNIX_SOCKET_DIR), so that no other user can connect. Without one
// — debug mode, the in-process server, a host that made none — it makes a
// private directory of its own in the temporary directory, removed when
// the listener is closed; the socket itself is removed then either way.
func listen(dir string) (net.Listener, error) {
	made := ""
	if dir == "" {
		d, err := os.MkdirTemp("", "pith-plugin-")
		if err != nil {
			return nil, err
		}
		dir, made = d, d
	}
	// One socket per process in the directory: the host's own (for its
	// API) has another name.
	l, err := net.Listen("unix", filepath.Join(dir, "plugin-"+strconv.Itoa(os.Getpid())+".sock"))
	if err != nil {
		if made != "" {
			_ = os.RemoveAll(made)
		}
		return nil, err
	}
	if made == "" {
		return l, nil
	}
	return &dirListener{Listener: l, dir: made}, nil
}

// dirListener removes the directory it was made in when closed.
type dirListener struct {
	net.Listener
	dir string
}

func (l *dirListener) Close() error {
	err := l.Listener.Close()
	_ = os.RemoveAll(l.dir)
	return err
}
