package sdk

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/pith-dev/pith/internal/plugintls"
	"github.com/pith-dev/pith/internal/wire"
)

// negotiate picks the protocol version to serve from those the host offers
// (PLUGIN_PROTOCOL_VERSIONS, comma-separated): this SDK speaks one. A host
// that offers none is taken to speak it, as go-plugin's server does.
func negotiate(offered string) (int, error) {
	if strings.TrimSpace(offered) == "" {
		return wire.ProtocolVersion, nil
	}
	for _, f := range strings.Split(offered, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && v == wire.ProtocolVersion {
			return v, nil
		}
	}
	return 0, fmt.Errorf("sdk: the host speaks plugin protocol versions %q, this plugin version %d: build the plugin against the SDK of the host's release", offered, wire.ProtocolVersion)
}

// handshakeLine is go-plugin's handshake line for a plugin serving version
// on addr: CORE|APP|NETWORK|ADDRESS|grpc|CERTIFICATE, the last field id's
// certificate (empty without TLS).
func handshakeLine(version int, addr net.Addr, id *plugintls.Identity) string {
	cert := ""
	if id != nil {
		cert = id.HandshakeField()
	}
	return fmt.Sprintf("%d|%d|%s|%s|grpc|%s\n", wire.CoreProtocolVersion, version, addr.Network(), addr.String(), cert)
}

// announce writes the handshake line on out, the host's end of the
// plugin's stdout, in one write.
func announce(out io.Writer, line string) error {
	if _, err := io.WriteString(out, line); err != nil {
		return fmt.Errorf("sdk: write the handshake line: %w", err)
	}
	return nil
}
