package sdk

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// InProcessPlugin is a handler served inside the calling process over a
// real gRPC connection: the server is the one Serve runs (the SDK's
// handler adaptation, panic guard, codec and message limits), listening on
// a unix socket in a private temporary directory; the caller's side is a
// gRPC client with the host's dial options, sending each event through the
// host's protobuf conversion. Deadlines, status codes, message size limits
// and the wire conversion therefore behave exactly as with a plugin
// subprocess. Only the process and the handshake (cookie, TLS) are left
// out.
//
// The host API is the one difference: a subprocess reaches the host
// over its own connection to the host API listener, an in-process handler gets the HostAPI of
// the calling context (hooks.WithHost; the Dispatcher and sdktest put one
// there) scoped to the event's session and revoked when the call returns,
// as the host scopes it.
//
// Close it when done; package sdktest does so when the test ends.
type InProcessPlugin struct {
	info   hooks.PluginInfo
	events []hooks.EventID
	rpc    pb.HooksClient
	conn   *grpc.ClientConn
	server *grpcServer
	served chan struct{} // closed when the server's serve has returned
	grants localGrants
	once   sync.Once
}

// describeTimeout bounds the Describe call that ends StartInProcess, as the
// host's start timeout bounds a subprocess's.
const describeTimeout = 10 * time.Second

// StartInProcess serves h in this process and connects to it. info is what
// the Dispatcher reads (name, priority, timeout, failure policy, limits);
// the events are those h reports in Describe, as for a subprocess. h is a
// handler value or a ServeOpts, as for Serve and ServePlugin; one they
// would refuse (CheckHandler) is refused here too.
func StartInProcess(info hooks.PluginInfo, h Handler) (*InProcessPlugin, error) {
	if err := CheckHandler(h); err != nil {
		return nil, err
	}
	name := info.Name
	if name == "" {
		name = "in-process"
	}
	ip := &InProcessPlugin{info: info, served: make(chan struct{})}
	if err := ip.start(newServer(handlerOf(h), config{name: name, version: "0.0.0"})); err != nil {
		return nil, fmt.Errorf("sdk: in-process plugin %q: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
	defer cancel()
	resp, err := ip.rpc.Describe(ctx, &pb.DescribeRequest{ConfiguredName: info.Name})
	if err != nil {
		_ = ip.Close()
		return nil, fmt.Errorf("sdk: in-process plugin %q: describe: %w", name, wire.ErrorFromStatus(err))
	}
	ip.events, _ = wire.EventsFromStrings(resp.GetEvents())
	return ip, nil
}

// start serves srv on a socket of its own and connects a client to it.
func (ip *InProcessPlugin) start(srv *server) error {
	l, err := listen("")
	if err != nil {
		close(ip.served)
		return fmt.Errorf("listen: %w", err)
	}
	ip.server = newGRPCServer(srv, nil, grpc.ChainUnaryInterceptor(ip.grants.intercept))
	go func() {
		defer close(ip.served)
		_ = ip.server.serve(l)
	}()
	// The host's dial options, without TLS: the same lazy client a plugin
	// makes of the host API.
	conn, err := dialHostLazily(l.Addr().Network()+":"+l.Addr().String(), nil)
	if err != nil {
		_ = ip.Close()
		return fmt.Errorf("connect: %w", err)
	}
	ip.conn, ip.rpc = conn, pb.NewHooksClient(conn)
	return nil
}

// Close ends the connection and stops the server; calls after it fail. It
// does not call the handler's Close (sdk.Closer), which the host's Shutdown
// would: in-process, the test owns the handler value and closes it.
func (ip *InProcessPlugin) Close() error {
	ip.once.Do(func() {
		if ip.conn != nil {
			_ = ip.conn.Close()
		}
		if ip.server != nil {
			ip.server.stop()
		}
		<-ip.served
	})
	return nil
}

var _ io.Closer = (*InProcessPlugin)(nil)

// Info implements hooks.Plugin.
func (ip *InProcessPlugin) Info() hooks.PluginInfo { return ip.info }

// Implements reports the events the handler listed in Describe.
func (ip *InProcessPlugin) Implements(event hooks.EventID) bool {
	for _, e := range ip.events {
		if e == event {
			return true
		}
	}
	return false
}

// BoundByContext tells the Dispatcher that a call returns when its context
// ends, as a subprocess's does: it is a gRPC call with that context.
func (ip *InProcessPlugin) BoundByContext() bool { return true }

var _ dispatch.ContextBound = (*InProcessPlugin)(nil)

// call makes one RPC the way the host does: the size check before sending,
// the host API granted for the call's session, the status mapped back.
func call[Req, Resp proto.Message](ctx context.Context, ip *InProcessPlugin, sessionID string, req Req, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, error) {
	var zero Resp
	if err := wire.CheckSize(req); err != nil {
		return zero, err
	}
	ctx, revoke := ip.grants.grant(ctx, dispatch.Scope{SessionID: sessionID, Limits: ip.info.Limits})
	defer revoke()
	resp, err := rpc(ctx, req)
	if err != nil {
		return zero, wire.ErrorFromStatus(err)
	}
	return resp, nil
}

// BeforeCompact implements hooks.Plugin.
func (ip *InProcessPlugin) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
	resp, err := call(ctx, ip, ev.SessionID, wire.BeforeCompactEventToProto(ev), ip.rpc.BeforeCompact)
	if err != nil {
		return nil, err
	}
	return wire.BeforeCompactResultFromProto(resp), nil
}

// Compacting implements hooks.Plugin.
func (ip *InProcessPlugin) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
	resp, err := call(ctx, ip, ev.SessionID, wire.CompactingEventToProto(ev), ip.rpc.Compacting)
	if err != nil {
		return nil, err
	}
	return wire.CompactingResultFromProto(resp), nil
}

// Compact implements hooks.Plugin.
func (ip *InProcessPlugin) Compact(ctx context.Context, ev *hooks.CompactEvent) error {
	_, err := call(ctx, ip, ev.SessionID, wire.CompactEventToProto(ev), ip.rpc.Compact)
	return err
}

// BeforeTree implements hooks.Plugin.
func (ip *InProcessPlugin) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent) (*hooks.BeforeTreeResult, error) {
	resp, err := call(ctx, ip, ev.SessionID, wire.BeforeTreeEventToProto(ev), ip.rpc.BeforeTree)
	if err != nil {
		return nil, err
	}
	return wire.BeforeTreeResultFromProto(resp), nil
}

// Tree implements hooks.Plugin.
func (ip *InProcessPlugin) Tree(ctx context.Context, ev *hooks.TreeEvent) error {
	_, err := call(ctx, ip, ev.SessionID, wire.TreeEventToProto(ev), ip.rpc.Tree)
	return err
}

// NewPlugin is StartInProcess for callers that cannot handle an error: a
// plugin that failed to start answers every call with the reason. The
// result is an *InProcessPlugin (close it) unless the start failed.
func NewPlugin(info hooks.PluginInfo, p any) hooks.Plugin {
	ip, err := StartInProcess(info, p)
	if err != nil {
		return failedPlugin{info: info, err: err}
	}
	return ip
}

// failedPlugin is a plugin whose start failed.
type failedPlugin struct {
	info hooks.PluginInfo
	err  error
}

func (f failedPlugin) Info() hooks.PluginInfo { return f.info }

func (f failedPlugin) Implements(hooks.EventID) bool { return true }

func (f failedPlugin) BeforeCompact(context.Context, *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
	return nil, f.err
}

func (f failedPlugin) Compacting(context.Context, *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
	return nil, f.err
}

func (f failedPlugin) Compact(context.Context, *hooks.CompactEvent) error { return f.err }

func (f failedPlugin) BeforeTree(context.Context, *hooks.BeforeTreeEvent) (*hooks.BeforeTreeResult, error) {
	return nil, f.err
}

func (f failedPlugin) Tree(context.Context, *hooks.TreeEvent) error { return f.err }

// localGrants carries the caller's host API across the connection with the
// host's capabilities (wire.Grants): each call sends a fresh token in the
// host's metadata key, the server side swaps it for the HostAPI it stands
// for, scoped to the call's session, and the grant is revoked when the
// call returns.
type localGrants struct{ wire.Grants }

// grant issues a token for the HostAPI of ctx, if it carries one.
func (g *localGrants) grant(ctx context.Context, scope dispatch.Scope) (context.Context, func()) {
	host, ok := hooks.HostFromContext(ctx)
	if !ok {
		return ctx, func() {}
	}
	return g.Grant(ctx, host, scope)
}

// intercept gives the handler the HostAPI its call's token stands for.
func (g *localGrants) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if h, ok := g.Lookup(ctx); ok {
		ctx = hooks.WithHost(ctx, h)
	}
	return handler(ctx, req)
}
