package sdk

import (
	"net"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/plugintls"
)

// TestNegotiate: the plugin serves its one version when the host offers it
// among others (in any order, with spaces) or offers nothing, and refuses,
// naming both sides, when the host offers only others or garbage.
func TestNegotiate(t *testing.T) {
	for _, offered := range []string{"", " ", "1", "2,1", " 1 , 3", "x,1"} {
		if v, err := negotiate(offered); err != nil || v != 1 {
			t.Errorf("negotiate(%q) = %d, %v; want 1", offered, v, err)
		}
	}
	for _, offered := range []string{"2", "0", "x", ",", "11"} {
		if _, err := negotiate(offered); err == nil || !strings.Contains(err.Error(), "version 1") {
			t.Errorf("negotiate(%q) = %v; want a refusal naming version 1", offered, err)
		}
	}
}

// TestHandshakeLine: go-plugin's six fields, the certificate unpadded
// base64 DER, or empty without TLS.
func TestHandshakeLine(t *testing.T) {
	addr := &net.UnixAddr{Name: "/run/p/plugin-7.sock", Net: "unix"}
	if got, want := handshakeLine(1, addr, nil), "1|1|unix|/run/p/plugin-7.sock|grpc|\n"; got != want {
		t.Errorf("without TLS: %q, want %q", got, want)
	}
	id, err := plugintls.New()
	if err != nil {
		t.Fatal(err)
	}
	got := handshakeLine(1, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4242}, id)
	if want := "1|1|tcp|127.0.0.1:4242|grpc|" + id.HandshakeField() + "\n"; got != want {
		t.Errorf("with TLS: %q, want %q", got, want)
	}
}
