package sdk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// errHostAddress: the host's DescribeRequest.host_api_address is not
// "unix:<path>" or "tcp:<host:port>".
var errHostAddress = errors.New("sdk: the host API address is not unix:<path> or tcp:<host:port>")

// dialHostLazily returns a client of the host API listening at address
// (DescribeRequest.host_api_address, "<network>:<address>") that makes no
// connection until its first call: grpc.NewClient stays idle until then.
// Most plugins never call the host, and a connection is a TLS handshake,
// HTTP/2 and a gRPC channel on both sides at every plugin start. Calls
// made at once share the one connection the first of them opens.
//
// The TLS is what go-plugin's broker dials with: tlsCfg, the plugin's
// configuration (its own certificate as client certificate, the host's
// from PLUGIN_CLIENT_CERT as the only root, server name "localhost"); nil
// — debug mode, where the attached host speaks no TLS — dials without.
func dialHostLazily(address string, tlsCfg *tls.Config) (*grpc.ClientConn, error) {
	network, addr, ok := strings.Cut(address, ":")
	if !ok || addr == "" || (network != "unix" && network != "tcp") {
		return nil, fmt.Errorf("%w: %q", errHostAddress, address)
	}
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	var d net.Dialer
	opts := append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}),
		grpc.WithTransportCredentials(creds),
	}, wire.DialOptions()...)
	// passthrough: the dialer above knows the address; the target only
	// names the authority, which TLS does not use (ServerName is set).
	return grpc.NewClient("passthrough:///localhost", opts...)
}
