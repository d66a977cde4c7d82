package config

import (
	"github.com/pith-dev/pith/internal/netaddr"
	"github.com/pith-dev/pith/store/sessionname"
)

// A daemon reachable from other machines must not accept anyone who can
// connect. The rule lives here, in one place, so that the configuration's
// validation and the --listen flag of `pith serve` apply the same one.

// Loopback reports whether addr (host:port or unix:/path) can only be
// reached from this machine: a unix socket, "localhost", or a loopback IP.
// An empty host (":7420") listens on every interface.
func Loopback(addr string) bool { return netaddr.Loopback(addr) }

// Authenticated reports whether every caller must prove who it is: a
// server certificate plus client certificates (mutual TLS) or bearer
// tokens.
func (s Server) Authenticated() bool {
	return s.TLS.Enabled() && (s.TLS.ClientCAFile != "" || len(s.Tokens) > 0)
}

// ExposureProblem says, in one line naming the keys to set, why the daemon
// must not listen on addr with this configuration; "" when it may.
func (s Server) ExposureProblem(addr string) string {
	if addr == "" || Loopback(addr) || s.Authenticated() {
		return ""
	}
	return addr + " is reachable from other machines: set server.tls.certFile and server.tls.keyFile, " +
		"and server.tls.clientCAFile or server.tokens, or listen on loopback or a unix: socket"
}

// SafePrefix reports whether p is a token's session-path prefix: one or
// more directory names of the session name grammar, each followed by "/".
func SafePrefix(p string) bool { return sessionname.SafePrefix(p) }

// The values of server.reflection.
const (
	ReflectionAuto = "auto"
	ReflectionOn   = "on"
	ReflectionOff  = "off"
)
