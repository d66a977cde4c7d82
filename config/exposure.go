package config

import (
	"strings"

	"github.com/pith-dev/pith/internal/netaddr"
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
func SafePrefix(p string) bool {
	if !strings.HasSuffix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if !SafeSegment(seg) {
			return false
		}
	}
	return true
}

// SafeSegment reports whether seg is one element of a session name:
// [A-Za-z0-9._-], not empty, not starting with a dot (no "..", no hidden
// files).
func SafeSegment(seg string) bool {
	if seg == "" || seg[0] == '.' {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
