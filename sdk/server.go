package sdk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// server adapts the plugin's handlers to the Hooks gRPC service.
type server struct {
	pb.UnimplementedHooksServer
	p      any
	cfg    config
	plugin hooks.Plugin
	// tls is the plugin's TLS configuration (serveTLS), with which the
	// host API is dialled; nil when the host asked for no TLS.
	tls *tls.Config

	mu   sync.Mutex
	host *hostClient
	conn *grpc.ClientConn
}

func newServer(p any, cfg config) *server {
	return &server{p: p, cfg: cfg, plugin: dispatch.NewPlugin(hooks.PluginInfo{Name: cfg.name}, p)}
}

func (s *server) Describe(ctx context.Context, req *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	// The host gives its API's address: connect on the first host call, if
	// one ever comes. (Hosts before host_api_address existed gave only a
	// go-plugin broker id, which the SDK, serving without go-plugin, no
	// longer dials: a plugin of this SDK has no host API under them.)
	if addr := req.GetHostApiAddress(); addr != "" {
		conn, err := dialHostLazily(addr, s.tls)
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		s.mu.Lock()
		old := s.conn
		s.conn, s.host = conn, newHostClient(pb.NewHostAPIClient(conn))
		s.mu.Unlock()
		if old != nil {
			_ = old.Close()
		}
	}
	return &pb.DescribeResponse{Name: s.cfg.name, Version: s.cfg.version, Events: wire.EventsToStrings(hooks.DetectEvents(s.p))}, nil
}

// withHost gives the handler the host API, carrying the capability the
// host sent with this call: the host honours it for this call's session
// and only while the call runs.
func (s *server) withHost(ctx context.Context) context.Context {
	s.mu.Lock()
	h := s.host
	s.mu.Unlock()
	if h == nil {
		return ctx
	}
	var token string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(wire.CapabilityKey); len(v) == 1 {
			token = v[0]
		}
	}
	return hooks.WithHost(ctx, h.withCapability(token))
}

func (s *server) check(event hooks.EventID) error {
	if !s.plugin.Implements(event) {
		return status.Errorf(codes.Unimplemented, "plugin does not handle %s", event)
	}
	return nil
}

// guard runs a handler, turning a panic into an error and the handler's
// error into a gRPC status the host can classify.
func guard[R any](ctx context.Context, s *server, event hooks.EventID, fn func(context.Context) (R, error)) (r R, err error) {
	if err := s.check(event); err != nil {
		return r, err
	}
	defer func() {
		if v := recover(); v != nil {
			// The error says it to the host, which logs it in one
			// line; the stack is for a host at debug level.
			Logger().Debug("handler panicked", "event", event, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = status.Errorf(codes.Internal, "%s handler panicked: %v", event, v)
		}
	}()
	r, err = fn(s.withHost(ctx))
	if err != nil {
		return r, toStatus(err)
	}
	return r, nil
}

func toStatus(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codes.Unknown, err.Error())
}

func (s *server) BeforeCompact(ctx context.Context, req *pb.BeforeCompactRequest) (*pb.BeforeCompactResponse, error) {
	return guard(ctx, s, hooks.EventBeforeCompact, func(ctx context.Context) (*pb.BeforeCompactResponse, error) {
		res, err := s.plugin.BeforeCompact(ctx, wire.BeforeCompactEventFromProto(req))
		if err != nil {
			return nil, err
		}
		return wire.BeforeCompactResultToProto(res), nil
	})
}

func (s *server) Compacting(ctx context.Context, req *pb.CompactingRequest) (*pb.CompactingResponse, error) {
	return guard(ctx, s, hooks.EventCompacting, func(ctx context.Context) (*pb.CompactingResponse, error) {
		res, err := s.plugin.Compacting(ctx, wire.CompactingEventFromProto(req))
		if err != nil {
			return nil, err
		}
		return wire.CompactingResultToProto(res), nil
	})
}

func (s *server) Compact(ctx context.Context, req *pb.CompactRequest) (*pb.CompactResponse, error) {
	return guard(ctx, s, hooks.EventCompact, func(ctx context.Context) (*pb.CompactResponse, error) {
		return &pb.CompactResponse{}, s.plugin.Compact(ctx, wire.CompactEventFromProto(req))
	})
}

func (s *server) BeforeTree(ctx context.Context, req *pb.BeforeTreeRequest) (*pb.BeforeTreeResponse, error) {
	return guard(ctx, s, hooks.EventBeforeTree, func(ctx context.Context) (*pb.BeforeTreeResponse, error) {
		res, err := s.plugin.BeforeTree(ctx, wire.BeforeTreeEventFromProto(req))
		if err != nil {
			return nil, err
		}
		return wire.BeforeTreeResultToProto(res), nil
	})
}

func (s *server) Tree(ctx context.Context, req *pb.TreeRequest) (*pb.TreeResponse, error) {
	return guard(ctx, s, hooks.EventTree, func(ctx context.Context) (*pb.TreeResponse, error) {
		return &pb.TreeResponse{}, s.plugin.Tree(ctx, wire.TreeEventFromProto(req))
	})
}

func (s *server) Ping(context.Context, *pb.PingRequest) (*pb.PingResponse, error) {
	return &pb.PingResponse{}, nil
}

func (s *server) Shutdown(context.Context, *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	var err error
	if c, ok := s.p.(Closer); ok {
		err = c.Close()
	}
	s.mu.Lock()
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn, s.host = nil, nil
	}
	s.mu.Unlock()
	if err != nil {
		return nil, status.Errorf(codes.Unknown, "close: %v", err)
	}
	return &pb.ShutdownResponse{}, nil
}
