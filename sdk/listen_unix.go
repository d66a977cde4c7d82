//go:build unix

package sdk

import (
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pith-dev/pith/internal/privsock"
)

// listen makes the socket a plugin serves on: a unix socket in dir, the
// private directory (mode 0700) the host made for this plugin
// (PLUGIN_UNIX_SOCKET_DIR), so that no other user can connect. Without one
// — debug mode, the in-process server, a host that made none — it makes a
// private directory of its own in the temporary directory, removed when
// the listener is closed; the socket itself is removed then either way.
func listen(dir string) (net.Listener, error) {
	// One socket per process in the directory: the host's own (for its
	// API) has another name.
	name := "plugin-" + strconv.Itoa(os.Getpid()) + ".sock"
	if dir == "" {
		return privsock.Listen("", "pith-plugin-", name)
	}
	return net.Listen("unix", filepath.Join(dir, name))
}
