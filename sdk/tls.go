package sdk

import (
	"crypto/tls"

	"github.com/pith-dev/pith/internal/plugintls"
)

// serveTLS prepares the plugin's half of mutual TLS with the host (see
// internal/plugintls) when the host asked for it by passing its certificate
// (PEM) in PLUGIN_CLIENT_CERT: a fresh P-256 identity, whose certificate the
// handshake line carries, and the configuration that serves with it and
// also dials the host API. nil, nil, nil when the host asked for none (the
// plugin then serves without TLS, as go-plugin's would).
func serveTLS(hostPEM string) (*plugintls.Identity, *tls.Config, error) {
	if hostPEM == "" {
		return nil, nil, nil
	}
	id, err := plugintls.New()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := id.ServerConfig([]byte(hostPEM))
	if err != nil {
		return nil, nil, err
	}
	return id, cfg, nil
}
