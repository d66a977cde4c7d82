// Package plugintls makes the certificates and TLS configurations of the
// mutual TLS between Pith's host and a plugin process, for both sides: the
// host (internal/pluginhost) and the Go SDK (sdk).
//
// The scheme is go-plugin's AutoMTLS, with one change: keys are ECDSA P-256
// instead of P-521. AutoMTLS generates a P-521 key on each side and signs
// and verifies with it in every handshake — tens of milliseconds of CPU per
// plugin start, most of a CLI command's time with a few plugins. P-256 has
// constant-time assembly in Go and is accepted by every TLS stack a plugin
// is written against (Go, Node's OpenSSL, Python grpcio's BoringSSL);
// Ed25519 certificates are not, everywhere.
//
// What stays as go-plugin does it:
//   - each plugin process makes its own self-signed certificate, and the
//     host one for all the plugins it starts (go-plugin makes one per
//     plugin; the host's key is as private either way); a private key
//     never leaves its process's memory;
//   - the host passes its certificate (PEM) to the plugin in
//     PLUGIN_CLIENT_CERT; the plugin trusts exactly that certificate as the
//     issuer of client certificates and as root when it dials the host's
//     broker;
//   - the plugin prints its certificate (DER, unpadded standard base64) as
//     the sixth field of the handshake line, and the host trusts exactly
//     that one, with server name "localhost";
//   - both sides require and verify the other's certificate.
//
// A plugin that still makes go-plugin's P-521 certificates keeps working:
// only the host's own key got cheaper, and it verifies whatever curve the
// plugin's certificate uses.
package plugintls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// ServerName is the name both certificates carry and each side verifies.
const ServerName = "localhost"

// curves are the key exchanges both sides offer: X25519, then P-256 for
// TLS stacks without it (Python's grpcio offers only P-256). Go's default
// puts the post-quantum hybrid X25519MLKEM768 first, which costs about as
// much again per handshake; the connection is a socket between two
// processes of one user on one machine, with keys that live as long as the
// plugin, so nothing recorded off a network could be decrypted later.
var curves = []tls.CurveID{tls.X25519, tls.CurveP256}

// EnvClientCert names the variable in which the host passes its certificate
// (PEM) to the plugin; go-plugin's name for it.
const EnvClientCert = "PLUGIN_CLIENT_CERT"

// ErrBadPeerCert: the other side's certificate could not be read.
var ErrBadPeerCert = errors.New("plugin TLS: the peer's certificate is not valid")

// validity is how long a certificate is valid. The key lives only in one
// process's memory for that process's life, so expiry protects nothing;
// a short validity would only break the reconnects of a long-running
// daemon's plugins. It starts 30 s in the past to absorb clock skew.
const (
	validity = 10 * 365 * 24 * time.Hour
	skew     = 30 * time.Second
)

// Identity is one side's certificate and key for one plugin process.
type Identity struct {
	// Cert is the certificate with its private key, for tls.Config.
	Cert tls.Certificate
	// DER is the certificate alone.
	DER []byte
}

// New makes a self-signed P-256 certificate for ServerName, usable to
// serve, as a client, and as its own issuer (the peer trusts it as a root).
func New() (*Identity, error) { return newIdentity(elliptic.P256()) }

// newIdentity is New on any curve (the tests compare with P-521).
func newIdentity(curve elliptic.Curve) (*Identity, error) {
	key, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("plugin TLS: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("plugin TLS: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: ServerName, Organization: []string{"Pith plugin"}},
		DNSNames:              []string{ServerName},
		NotBefore:             now.Add(-skew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("plugin TLS: certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("plugin TLS: certificate: %w", err)
	}
	return &Identity{Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, DER: der}, nil
}

// PEM is the certificate as PLUGIN_CLIENT_CERT carries it.
func (id *Identity) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.DER})
}

// HandshakeField is the certificate as the handshake line's sixth field
// carries it: DER in standard base64 without padding (the line is split
// on '|' and must stay one line).
func (id *Identity) HandshakeField() string {
	return base64.RawStdEncoding.EncodeToString(id.DER)
}

// ClientConfig is the host's configuration for one plugin process. Its
// RootCAs and ClientCAs are left empty: go-plugin fills both with the
// certificate of the plugin's handshake line, the only one trusted, before
// it dials (see Pinned).
func (id *Identity) ClientConfig() *tls.Config {
	return &tls.Config{
		Certificates:     []tls.Certificate{id.Cert},
		ClientAuth:       tls.RequireAndVerifyClientCert,
		MinVersion:       tls.VersionTLS12,
		ServerName:       ServerName,
		CurvePreferences: curves,
	}
}

// Pinned reports whether a ClientConfig holds the plugin's certificate,
// that is, whether go-plugin found one in the handshake line. Without it
// the host would verify the plugin against the system's roots.
func Pinned(cfg *tls.Config) bool {
	return cfg != nil && cfg.RootCAs != nil && cfg.ClientCAs != nil
}

// ServerConfig is the plugin's configuration given the host's certificate
// (PEM, from PLUGIN_CLIENT_CERT): it serves with id, requires a client
// certificate issued by exactly that one, and trusts it as the only root
// when it dials the host's broker.
func (id *Identity) ServerConfig(hostPEM []byte) (*tls.Config, error) {
	pool, err := PoolFromPEM(hostPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates:     []tls.Certificate{id.Cert},
		ClientAuth:       tls.RequireAndVerifyClientCert,
		ClientCAs:        pool,
		RootCAs:          pool,
		MinVersion:       tls.VersionTLS12,
		ServerName:       ServerName,
		CurvePreferences: curves,
	}, nil
}

// PoolFromPEM is a pool holding exactly the certificates of pemBytes; it
// fails when there is none.
func PoolFromPEM(pemBytes []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrBadPeerCert, EnvClientCert)
	}
	return pool, nil
}
