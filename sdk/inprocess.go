package sdk

import (
	"context"
	"fmt"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/protobuf/proto"
)

// NewPlugin runs p inside the host process through the same adaptation as
// Serve: every event and result is encoded to protobuf bytes and back, the
// handler runs under the same panic guard, and only the events p implements
// are reported. Tests use it (package sdktest) to see exactly what a
// subprocess would see, minus the process.
func NewPlugin(info hooks.PluginInfo, p any) hooks.Plugin {
	name := info.Name
	if name == "" {
		name = "in-process"
	}
	return &inProcess{info: info, srv: newServer(p, config{name: name, version: "0.0.0"})}
}

type inProcess struct {
	info hooks.PluginInfo
	srv  *server
}

func (ip *inProcess) Info() hooks.PluginInfo { return ip.info }

func (ip *inProcess) Implements(event hooks.EventID) bool { return ip.srv.plugin.Implements(event) }

// over sends req across a simulated wire: marshalled, unmarshalled, served,
// and the response marshalled and unmarshalled again.
func over[Req, Resp proto.Message](ctx context.Context, req Req, serve func(context.Context, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	in, err := clone(req)
	if err != nil {
		return zero, fmt.Errorf("encode request: %w", err)
	}
	out, err := serve(ctx, in)
	if err != nil {
		return zero, wire.ErrorFromStatus(err)
	}
	back, err := clone(out)
	if err != nil {
		return zero, fmt.Errorf("encode response: %w", err)
	}
	return back, nil
}

func clone[M proto.Message](m M) (M, error) {
	var zero M
	b, err := proto.Marshal(m)
	if err != nil {
		return zero, err
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		return zero, err
	}
	return out, nil
}

func (ip *inProcess) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
	resp, err := over(ctx, wire.BeforeCompactEventToProto(ev), ip.srv.BeforeCompact)
	if err != nil {
		return nil, err
	}
	return wire.BeforeCompactResultFromProto(resp), nil
}

func (ip *inProcess) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
	resp, err := over(ctx, wire.CompactingEventToProto(ev), ip.srv.Compacting)
	if err != nil {
		return nil, err
	}
	return wire.CompactingResultFromProto(resp), nil
}

func (ip *inProcess) Compact(ctx context.Context, ev *hooks.CompactEvent) error {
	_, err := over(ctx, wire.CompactEventToProto(ev), ip.srv.Compact)
	return err
}

func (ip *inProcess) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent) (*hooks.BeforeTreeResult, error) {
	resp, err := over(ctx, wire.BeforeTreeEventToProto(ev), ip.srv.BeforeTree)
	if err != nil {
		return nil, err
	}
	return wire.BeforeTreeResultFromProto(resp), nil
}

func (ip *inProcess) Tree(ctx context.Context, ev *hooks.TreeEvent) error {
	_, err := over(ctx, wire.TreeEventToProto(ev), ip.srv.Tree)
	return err
}
