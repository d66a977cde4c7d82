package sdk

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/go-plugin"
	"github.com/pith-dev/pith/internal/plugintls"
)

// The plugin's half of mutual TLS with the host (see internal/plugintls):
// the SDK makes its own P-256 certificate and hands go-plugin a finished
// tls.Config (ServeConfig.TLSProvider) instead of letting AutoMTLS make a
// P-521 one, which costs tens of milliseconds of CPU at every start.
//
// go-plugin prints the server certificate in the handshake line only when
// it made the certificate itself: with a TLSProvider the field stays empty
// and the host would have nothing to pin. So the SDK gives go-plugin a pipe
// as os.Stdout while it serves, copies what go-plugin writes to the real
// stdout, and fills the certificate field of the handshake line on the way.

// serveTLS prepares mutual TLS for sc when the host asked for it by passing
// its certificate in PLUGIN_CLIENT_CERT, and returns the identity whose
// certificate the handshake line must carry and the configuration, which
// also dials the host API; nil, nil, nil when the host asked for none
// (go-plugin then serves without TLS, as it would).
func serveTLS(sc *plugin.ServeConfig, hostPEM string) (*plugintls.Identity, *tls.Config, error) {
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
	sc.TLSProvider = func() (*tls.Config, error) { return cfg, nil }
	return id, cfg, nil
}

// announceCertificate points os.Stdout at a pipe whose lines are copied to
// the real stdout, the handshake line with id's certificate in its sixth
// field. It must be called right before plugin.Serve, which prints the
// handshake line on os.Stdout and then replaces os.Stdout with its own
// stdio stream; the copy goes on for anything written to the pipe later.
func announceCertificate(id *plugintls.Identity) error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sdk: stdout pipe: %w", err)
	}
	real := os.Stdout
	os.Stdout = w
	go func() {
		defer r.Close()
		copyWithCertificate(real, r, id.HandshakeField())
	}()
	return nil
}

// copyWithCertificate copies src to dst line by line until src ends,
// filling the certificate field of the first handshake line.
func copyWithCertificate(dst io.Writer, src io.Reader, cert string) {
	br := bufio.NewReader(src)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if out, ok := withCertificate(line, cert); ok {
				line = out
				cert = "" // only the first handshake line
			}
			if _, werr := io.WriteString(dst, line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		if cert == "" {
			_, _ = io.Copy(dst, br)
			return
		}
	}
}

// withCertificate returns line, a go-plugin handshake line
// (CORE|APP|NETWORK|ADDR|PROTOCOL|CERT[|MUX]\n), with cert in its empty
// sixth field; ok is false for any other line, or when cert is "".
func withCertificate(line, cert string) (string, bool) {
	if cert == "" {
		return line, false
	}
	body, nl := strings.CutSuffix(line, "\n")
	f := strings.Split(body, "|")
	if len(f) < 5 || f[0] != strconv.Itoa(plugin.CoreProtocolVersion) {
		return line, false
	}
	switch {
	case len(f) == 5:
		f = append(f, cert)
	case f[5] == "":
		f[5] = cert
	default:
		return line, false // go-plugin made a certificate of its own
	}
	out := strings.Join(f, "|")
	if nl {
		out += "\n"
	}
	return out, true
}
