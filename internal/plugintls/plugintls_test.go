package plugintls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net"
	"testing"
)

// handshake runs one mutual TLS handshake the way the host and a plugin do:
// the plugin serves with ServerConfig(host's PEM), the host dials with
// ClientConfig and the plugin's certificate as its only root.
func handshake(tb testing.TB, host, plug *Identity) error {
	srvCfg, err := plug.ServerConfig(host.PEM())
	if err != nil {
		return err
	}
	cliCfg := host.ClientConfig()
	pool := x509.NewCertPool()
	pool.AddCert(plug.Cert.Leaf)
	cliCfg.RootCAs, cliCfg.ClientCAs = pool, pool
	if !Pinned(cliCfg) {
		return errNotPinned
	}
	a, b := socketPair(tb)
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() { done <- tls.Server(b, srvCfg).Handshake() }()
	if err := tls.Client(a, cliCfg).Handshake(); err != nil {
		return err
	}
	return <-done
}

var errNotPinned = tls.AlertError(0)

// socketPair is both ends of a loopback TCP connection.
func socketPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	if b == nil {
		t.Fatal("accept failed")
	}
	return a, b
}

func TestMutualHandshake(t *testing.T) {
	host, err := New()
	if err != nil {
		t.Fatal(err)
	}
	plug, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, host, plug); err != nil {
		t.Fatal(err)
	}
	// A stranger's certificate is refused both ways.
	stranger, _ := New()
	srvCfg, _ := plug.ServerConfig(host.PEM())
	cliCfg := stranger.ClientConfig()
	pool := x509.NewCertPool()
	pool.AddCert(plug.Cert.Leaf)
	cliCfg.RootCAs = pool
	// A buffered socket pair: on net.Pipe, both sides may block writing
	// their alerts.
	a, b := socketPair(t)
	defer a.Close()
	defer b.Close()
	go func() { _ = tls.Client(a, cliCfg).Handshake(); a.Close() }()
	if err := tls.Server(b, srvCfg).Handshake(); err == nil {
		t.Fatal("the plugin accepted a client certificate other than the host's")
	}
	if k, ok := plug.Cert.Leaf.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Fatalf("key %T, want P-256", plug.Cert.Leaf.PublicKey)
	}
	if der, err := base64.RawStdEncoding.DecodeString(plug.HandshakeField()); err != nil || string(der) != string(plug.DER) {
		t.Fatalf("handshake field does not decode to the certificate: %v", err)
	}
	if _, err := PoolFromPEM([]byte("junk")); err == nil {
		t.Fatal("a PEM without certificate gave a pool")
	}
}

// BenchmarkNew: one side's certificate at each plugin start, P-256 as now
// and P-521 as go-plugin's AutoMTLS made it.
func BenchmarkNew(b *testing.B) {
	b.Run("P-256", func(b *testing.B) {
		for b.Loop() {
			if _, err := New(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("P-521", func(b *testing.B) {
		for b.Loop() {
			if _, err := newCurve(elliptic.P521()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHandshake: the mutual handshake both sides run on each
// connection (two per plugin start: the Hooks connection and the broker's).
func BenchmarkHandshake(b *testing.B) {
	for _, c := range []struct {
		name  string
		curve elliptic.Curve
	}{{"P-256", elliptic.P256()}, {"P-521", elliptic.P521()}} {
		b.Run(c.name, func(b *testing.B) {
			host, err := newCurve(c.curve)
			if err != nil {
				b.Fatal(err)
			}
			plug, err := newCurve(c.curve)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := handshake(b, host, plug); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// newCurve is New on another curve, for comparison.
func newCurve(curve elliptic.Curve) (*Identity, error) { return newIdentity(curve) }
