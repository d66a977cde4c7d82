//go:build !unix

package sdk

import "net"

// listen makes the socket a plugin serves on: where unix sockets are
// missing, a TCP port on the loopback interface, as go-plugin's server
// does there (the host then connects to 127.0.0.1). dir is not used.
func listen(string) (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
