// Package netaddr holds the one rule for whether an address stays on this
// machine, shared by the daemon's exposure check (config) and the Go
// client's refusal to send a token in clear text (client), so the two can
// never disagree. It is its own package so the client does not link the
// configuration loader.
package netaddr

import (
	"net"
	"strings"
)

// Loopback reports whether addr (host:port or unix:/path) can only be
// reached from this machine: a unix socket, "localhost", or a loopback IP.
// An empty host (":7420") listens on every interface.
func Loopback(addr string) bool {
	if strings.HasPrefix(addr, "unix:") {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
