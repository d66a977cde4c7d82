package sdk

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"
	"github.com/pith-dev/pith/internal/plugintls"
)

func TestWithCertificate(t *testing.T) {
	cases := []struct{ in, want string }{
		{"1|1|unix|/tmp/p|grpc|\n", "1|1|unix|/tmp/p|grpc|CERT\n"},
		{"1|1|unix|/tmp/p|grpc\n", "1|1|unix|/tmp/p|grpc|CERT\n"},
		{"1|1|unix|/tmp/p|grpc||true\n", "1|1|unix|/tmp/p|grpc|CERT|true\n"},
		{"1|1|unix|/tmp/p|grpc|", "1|1|unix|/tmp/p|grpc|CERT"},
		// Not a handshake line, or one with a certificate already: as is.
		{"hello world\n", "hello world\n"},
		{"2|1|unix|/tmp/p|grpc|\n", "2|1|unix|/tmp/p|grpc|\n"},
		{"1|1|unix|/tmp/p|grpc|OTHER\n", "1|1|unix|/tmp/p|grpc|OTHER\n"},
	}
	for _, c := range cases {
		if got, _ := withCertificate(c.in, "CERT"); got != c.want {
			t.Errorf("withCertificate(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCopyWithCertificate: lines before the handshake line pass unchanged,
// the first handshake line gets the certificate, later ones do not.
func TestCopyWithCertificate(t *testing.T) {
	var out strings.Builder
	copyWithCertificate(&out, strings.NewReader("noise\n1|1|unix|/a|grpc|\n1|1|unix|/b|grpc|\ntail"), "C")
	want := "noise\n1|1|unix|/a|grpc|C\n1|1|unix|/b|grpc|\ntail"
	if out.String() != want {
		t.Fatalf("copied %q, want %q", out.String(), want)
	}
}

// TestServeTLS: with the host's certificate the plugin serves with a P-256
// certificate for localhost that verifies as its own root, requires client
// certificates issued by the host's, and prints its DER unpadded.
func TestServeTLS(t *testing.T) {
	host, err := plugintls.New()
	if err != nil {
		t.Fatal(err)
	}
	sc := &plugin.ServeConfig{}
	id, dialCfg, err := serveTLS(sc, string(host.PEM()))
	if err != nil || id == nil || sc.TLSProvider == nil {
		t.Fatalf("serveTLS = %v, %v", id, err)
	}
	cfg, _ := sc.TLSProvider()
	if dialCfg != cfg {
		t.Fatal("the host API is not dialled with the configuration go-plugin serves and its broker dials with")
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

	if id, cfg, err := serveTLS(&plugin.ServeConfig{}, ""); id != nil || cfg != nil || err != nil {
		t.Fatalf("without a host certificate: %v, %v, %v; want no TLS", id, cfg, err)
	}
	if _, _, err := serveTLS(&plugin.ServeConfig{}, "not a certificate"); err == nil {
		t.Fatal("a garbled PLUGIN_CLIENT_CERT was accepted")
	}
}
