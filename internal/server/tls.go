package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/pith-dev/pith/config"
)

// TLSConfig builds the daemon's TLS from server.tls: the server
// certificate, and with clientCAFile the pool client certificates must
// chain to. Client certificates are verified when given and demanded by
// the interceptor, not the handshake, so that a client without one gets
// Unauthenticated and a clear message instead of a broken connection.
func TLSConfig(t config.ServerTLS) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, errors.New("server.tls: no certificate configured")
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("server.tls: %w", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("server.tls.clientCAFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server.tls.clientCAFile %s: no PEM certificate in it", t.ClientCAFile)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return c, nil
}
