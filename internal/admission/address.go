package admission

import (
	"net"
	"net/netip"
)

// AddressKey is the remote address a connection (or a viewer's stream)
// counts against for a per-address bound: an IPv4 address, or an IPv6
// address's /64 — the block one host or one customer of a provider is
// given, which it can fill with addresses at will. A connection without
// an IP address (a unix socket: every peer is a process allowed to open
// the socket, mode 0600, so the daemon's own user) has the key "" and is
// bound only by the total.
func AddressKey(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return keyOf(ta.AddrPort().Addr())
	}
	return ""
}

// RemoteKey is AddressKey of an HTTP request's RemoteAddr (host:port).
func RemoteKey(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return ""
	}
	return keyOf(ap.Addr())
}

func keyOf(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		return ip.String()
	case ip.Is6():
		p, _ := ip.WithZone("").Prefix(64)
		return p.String()
	}
	return ""
}

// AddressCaps are caps for a hold by the address key: a key "" (no IP
// address) is bound by the total only.
func AddressCaps(key string, caps Caps) Caps {
	if key == "" {
		caps.PerKey = 0
	}
	return caps
}
