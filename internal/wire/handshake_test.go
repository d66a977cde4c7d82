package wire_test

import (
	"testing"

	"github.com/hashicorp/go-plugin"
	"github.com/pith-dev/pith/internal/wire"
)

// TestHandshakeIsGoPlugins: wire restates what it shares with go-plugin
// (so that the SDK links none of it); the host converts the handshake to
// go-plugin's type, and the names and numbers are go-plugin's own.
func TestHandshakeIsGoPlugins(t *testing.T) {
	h := plugin.HandshakeConfig(wire.Handshake)
	if h.ProtocolVersion != wire.ProtocolVersion || h.MagicCookieKey == "" || h.MagicCookieValue == "" {
		t.Fatalf("handshake %+v", h)
	}
	if wire.CoreProtocolVersion != plugin.CoreProtocolVersion {
		t.Errorf("CoreProtocolVersion %d, go-plugin's %d", wire.CoreProtocolVersion, plugin.CoreProtocolVersion)
	}
	if wire.EnvUnixSocketDir != plugin.EnvUnixSocketDir {
		t.Errorf("EnvUnixSocketDir %q, go-plugin's %q", wire.EnvUnixSocketDir, plugin.EnvUnixSocketDir)
	}
	if wire.EnvProtocolVersions != "PLUGIN_PROTOCOL_VERSIONS" {
		t.Errorf("EnvProtocolVersions %q", wire.EnvProtocolVersions)
	}
}
