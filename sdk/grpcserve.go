package sdk

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// The SDK serves a plugin with gRPC alone, not with go-plugin's Serve: a
// plugin binary then links none of go-plugin's server side (net/rpc, gob,
// yamux, gRPC reflection and protodesc), whose package initialisation was
// about a third of a plugin process's start, paid again by every plugin of
// every CLI command. What the host needs of go-plugin's protocol is small
// and written down in docs/protocol.md, which plugins in other languages
// already follow: the handshake line (handshake.go), a unix socket in the
// directory the host made (listen_*.go), mutual TLS (tls.go), and these
// services:
//   - pith.hooks.v1.Hooks, the events;
//   - plugin.GRPCController, whose Shutdown is go-plugin's graceful stop:
//     the host's go-plugin client sends it when it ends the plugin, then
//     waits for the process to exit before it kills it.
//
// go-plugin's broker, stdio stream and health service are not served: the
// host's client is told they are unimplemented and goes on without them
// (the host API's address comes in Describe; stderr is read directly).

// stopGrace bounds the graceful stop: calls still running after it are cut.
const stopGrace = 2 * time.Second

// grpcServer is one plugin's gRPC server, from its start until stopped.
type grpcServer struct {
	gs       *grpc.Server
	stopOnce sync.Once
	stopped  chan struct{} // closed once stop has finished
}

// newGRPCServer serves srv's Hooks service and the controller on a new
// server, with TLS when tlsCfg is not nil, and extra options after the
// SDK's own.
func newGRPCServer(srv *server, tlsCfg *tls.Config, extra ...grpc.ServerOption) *grpcServer {
	var opts []grpc.ServerOption
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	s := &grpcServer{gs: wire.NewPluginServer(append(opts, extra...)), stopped: make(chan struct{})}
	pb.RegisterHooksServer(s.gs, srv)
	s.gs.RegisterService(&controllerService, s)
	return s
}

// serve accepts connections on l until the server is stopped, then waits
// for the stop to finish (so that the controller's answer is sent before
// the process exits); it returns nil when stopped, or why it could not
// accept.
func (s *grpcServer) serve(l net.Listener) error {
	// Serve returns nil once stop has begun (ErrServerStopped when it began
	// first); any other error is the listener's.
	if err := s.gs.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	<-s.stopped
	return nil
}

// stop ends the server: calls running may finish, for at most stopGrace.
// It may be called more than once, and from a handler of the server (it
// does not wait then).
func (s *grpcServer) stop() {
	s.stopOnce.Do(func() {
		go func() {
			defer close(s.stopped)
			t := time.AfterFunc(stopGrace, s.gs.Stop)
			s.gs.GracefulStop()
			t.Stop()
		}()
	})
}

// controllerService is go-plugin's plugin.GRPCController service, Shutdown
// its only method (internal/plugin/grpc_controller.proto in go-plugin):
// both messages are empty, so the descriptor is written here rather than
// generated, with no proto package to link.
var controllerService = grpc.ServiceDesc{
	ServiceName: "plugin.GRPCController",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Shutdown",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in empty
			if err := dec(&in); err != nil {
				return nil, err
			}
			srv.(*grpcServer).stop()
			return &empty{}, nil
		},
	}},
	Metadata: "plugin/grpc_controller.proto",
}

// empty is an empty protobuf message, in the form the SDK's codec encodes
// and decodes (wire's vtprotobuf interface). Fields a newer peer might add
// are ignored, as unknown fields are.
type empty struct{}

func (*empty) SizeVT() int                                { return 0 }
func (*empty) MarshalToSizedBufferVT([]byte) (int, error) { return 0, nil }
func (*empty) UnmarshalVT([]byte) error                   { return nil }
