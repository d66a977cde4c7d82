package sdk

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"testing"

	"github.com/pith-dev/pith/internal/plugintls"
)

// TestServeTLS: with the host's certificate the plugin serves with a P-256
// certificate for localhost that verifies as its own root, requires client
// certificates issued by the host's, and prints its DER unpadded.
func TestServeTLS(t *testing.T) {
	host, err := plugintls.New()
	if err != nil {
		t.Fatal(err)
	}
	id, cfg, err := serveTLS(string(host.PEM()))
	if err != nil || id == nil || cfg == nil {
		t.Fatalf("serveTLS = %v, %v, %v", id, cfg, err)
	}
	if cfg.ClientCAs == nil || cfg.RootCAs == nil || cfg.ClientAuth.String() != "RequireAndVerifyClientCert" {
		t.Fatalf("server config %+v", cfg)
	}
	der, err := base64.RawStdEncoding.DecodeString(id.HandshakeField())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Fatalf("key %T, want ECDSA P-256", cert.PublicKey)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool}); err != nil {
		t.Fatalf("the plugin's certificate does not verify as its own root: %v", err)
	}

	if id, cfg, err := serveTLS(""); id != nil || cfg != nil || err != nil {
		t.Fatalf("without a host certificate: %v, %v, %v; want no TLS", id, cfg, err)
	}
	if _, _, err := serveTLS("not a certificate"); err == nil {
		t.Fatal("a garbled PLUGIN_CLIENT_CERT was accepted")
	}
}
