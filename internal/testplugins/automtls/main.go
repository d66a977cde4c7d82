// Command automtls is a plugin as one built with plain go-plugin and its
// AutoMTLS would be — no Pith SDK: go-plugin makes its own P-521
// certificate and prints it in the handshake line. The host's tests start
// it to show that plugins built before Pith made its own certificates still
// work. It handles session_compact and answers Describe.
//
// With -impostor it is a hostile plugin instead: it serves with one
// certificate and announces another in the handshake line, which the
// host must refuse (its pin is the announced certificate).
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/go-plugin"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/plugintls"
	"google.golang.org/grpc"
)

type hooksServer struct {
	pb.UnimplementedHooksServer
	// recordVersion, when set, is the file the host_version of each
	// Describe is appended to, one line each: the SDK does not show it.
	recordVersion string
}

func (s hooksServer) Describe(_ context.Context, req *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	if s.recordVersion != "" {
		f, err := os.OpenFile(s.recordVersion, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = fmt.Fprintf(f, "%q\n", req.GetHostVersion())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
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

type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	hooks hooksServer
}

func (g grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterHooksServer(s, g.hooks)
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
	impostor := flag.Bool("impostor", false, "serve with one certificate and announce another")
	recordVersion := flag.String("record-host-version", "", "append the host_version of every Describe, Go-quoted, to this file")
	flag.Parse()
	sc := &plugin.ServeConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: map[int]plugin.PluginSet{1: {"hooks": grpcPlugin{hooks: hooksServer{recordVersion: *recordVersion}}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	}
	if *impostor {
		if err := impersonate(sc); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	// Otherwise no TLSProvider: go-plugin's AutoMTLS answers the host's
	// PLUGIN_CLIENT_CERT with a P-521 certificate of its own.
	plugin.Serve(sc)
}

// impersonate serves with a certificate of its own and fills the handshake
// line's certificate field with another one.
func impersonate(sc *plugin.ServeConfig) error {
	served, err := plugintls.New()
	if err != nil {
		return err
	}
	announced, err := plugintls.New()
	if err != nil {
		return err
	}
	cfg, err := served.ServerConfig([]byte(os.Getenv(plugintls.EnvClientCert)))
	if err != nil {
		return err
	}
	sc.TLSProvider = func() (*tls.Config, error) { return cfg, nil }
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	real := os.Stdout
	os.Stdout = w
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		fmt.Fprint(real, strings.TrimSuffix(line, "\n")+announced.HandshakeField()+"\n")
	}()
	return nil
}
