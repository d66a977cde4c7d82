// Command automtls is a plugin as one built with plain go-plugin and its
// AutoMTLS would be — no Pith SDK: go-plugin makes its own P-521
// certificate and prints it in the handshake line. The host's tests start
// it to show that plugins built before Pith made its own certificates still
// work. It handles session_compact and answers Describe.
package main

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	pb "github.com/pith-dev/pith/proto/pith/hooks/v1"
	"google.golang.org/grpc"
)

type hooksServer struct {
	pb.UnimplementedHooksServer
}

func (hooksServer) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return &pb.DescribeResponse{Name: "automtls", Version: "0.1.0", Events: []string{"session_compact"}}, nil
}

func (hooksServer) Compact(context.Context, *pb.CompactRequest) (*pb.CompactResponse, error) {
	return &pb.CompactResponse{}, nil
}

func (hooksServer) Ping(context.Context, *pb.PingRequest) (*pb.PingResponse, error) {
	return &pb.PingResponse{}, nil
}

func (hooksServer) Shutdown(context.Context, *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	return &pb.ShutdownResponse{}, nil
}

type grpcPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterHooksServer(s, hooksServer{})
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("plugin side only")
}

// The handshake as docs/protocol.md gives it: a plugin written without the
// SDK does not import Pith's wire package either.
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "PITH_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "5b1c1d0e-pith-hooks-v1-8f3a2c77d9e4",
}

func main() {
	// No TLSProvider: go-plugin's AutoMTLS answers the host's
	// PLUGIN_CLIENT_CERT with a P-521 certificate of its own.
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: map[int]plugin.PluginSet{1: {"hooks": grpcPlugin{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}
