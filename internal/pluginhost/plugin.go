package pluginhost

import (
	"context"
	"fmt"
	"time"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Info implements hooks.Plugin.
func (s *Supervisor) Info() hooks.PluginInfo { return *s.info.Load() }

// BoundByContext tells the Dispatcher that a call returns when its context
// ends: it is a gRPC call with that context.
func (s *Supervisor) BoundByContext() bool { return true }

var _ dispatch.ContextBound = (*Supervisor)(nil)

// Implements reports the events the plugin listed in Describe.
func (s *Supervisor) Implements(event hooks.EventID) bool {
	for _, e := range s.desc.Load().Events {
		if e == event {
			return true
		}
	}
	return false
}

// invoke runs one RPC on the current instance and maps its failure: a dead
// process is reported as a crash at once rather than at the next poll.
//
// An event call carries a host-API capability for its session, revoked
// when the call returns; Ping (scope nil) carries none.
func invoke[Req, Resp any](ctx context.Context, s *Supervisor, scope *dispatch.Scope, req Req, rpc func(*instance) func(context.Context, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	if m, ok := any(req).(proto.Message); ok {
		if err := wire.CheckSize(m); err != nil {
			return zero, err
		}
	}
	inst, err := s.acquire(ctx)
	if err != nil {
		return zero, err
	}
	if scope != nil {
		var revoke func()
		ctx, revoke = s.grants.Grant(ctx, s.opts.Host, *scope)
		defer revoke()
	}
	resp, err := rpc(inst)(ctx, req)
	if err == nil {
		return resp, nil
	}
	if status.Code(err) == codes.Unavailable && exitedSoon(inst) {
		// Report the crash now, so that the next call waits for the
		// restart instead of reaching the dead instance before the
		// monitor notices.
		why := inst.crashReason("process exited during a call")
		s.crashed(inst, why, true)
		return zero, fmt.Errorf("%w: %s", ErrPluginExited, why)
	}
	return zero, wire.ErrorFromStatus(err)
}

// scope is what an event call for sessionID may reach of the host API.
func (s *Supervisor) scope(sessionID string) *dispatch.Scope {
	return &dispatch.Scope{SessionID: sessionID, Limits: s.Info().Limits}
}

// BeforeCompact implements hooks.Plugin.
func (s *Supervisor) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
	resp, err := invoke(ctx, s, s.scope(ev.SessionID), wire.BeforeCompactEventToProto(ev), func(i *instance) func(context.Context, *pb.BeforeCompactRequest) (*pb.BeforeCompactResponse, error) {
		return grpcCall(i.rpc.BeforeCompact)
	})
	if err != nil {
		return nil, err
	}
	return wire.BeforeCompactResultFromProto(resp), nil
}

// Compacting implements hooks.Plugin.
func (s *Supervisor) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
	resp, err := invoke(ctx, s, s.scope(ev.SessionID), wire.CompactingEventToProto(ev), func(i *instance) func(context.Context, *pb.CompactingRequest) (*pb.CompactingResponse, error) {
		return grpcCall(i.rpc.Compacting)
	})
	if err != nil {
		return nil, err
	}
	return wire.CompactingResultFromProto(resp), nil
}

// Compact implements hooks.Plugin.
func (s *Supervisor) Compact(ctx context.Context, ev *hooks.CompactEvent) error {
	_, err := invoke(ctx, s, s.scope(ev.SessionID), wire.CompactEventToProto(ev), func(i *instance) func(context.Context, *pb.CompactRequest) (*pb.CompactResponse, error) {
		return grpcCall(i.rpc.Compact)
	})
	return err
}

// BeforeTree implements hooks.Plugin.
func (s *Supervisor) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent) (*hooks.BeforeTreeResult, error) {
	resp, err := invoke(ctx, s, s.scope(ev.SessionID), wire.BeforeTreeEventToProto(ev), func(i *instance) func(context.Context, *pb.BeforeTreeRequest) (*pb.BeforeTreeResponse, error) {
		return grpcCall(i.rpc.BeforeTree)
	})
	if err != nil {
		return nil, err
	}
	return wire.BeforeTreeResultFromProto(resp), nil
}

// Tree implements hooks.Plugin.
func (s *Supervisor) Tree(ctx context.Context, ev *hooks.TreeEvent) error {
	_, err := invoke(ctx, s, s.scope(ev.SessionID), wire.TreeEventToProto(ev), func(i *instance) func(context.Context, *pb.TreeRequest) (*pb.TreeResponse, error) {
		return grpcCall(i.rpc.Tree)
	})
	return err
}

// Ping checks the plugin's health.
func (s *Supervisor) Ping(ctx context.Context) error {
	_, err := invoke(ctx, s, nil, &pb.PingRequest{}, func(i *instance) func(context.Context, *pb.PingRequest) (*pb.PingResponse, error) {
		return grpcCall(i.rpc.Ping)
	})
	return err
}

// exitedSoon reports whether the instance's process has exited or does so
// within a short grace: a transport failure is seen by the caller a moment
// before go-plugin has reaped the process.
func exitedSoon(inst *instance) bool {
	deadline := time.Now().Add(exitGrace)
	for {
		if inst.client.Exited() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
