package pluginhost

import (
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// hostAPIServer serves hooks.HostAPI to one plugin instance (see
// hostAPIEndpoint).
// Every call must present the capability of a plugin call still running
// (see grants); it is served through that call's dispatch.ScopedHost. Log
// lines are written straight to the plugin's named logger, under the same
// rate limit as its stderr.
type hostAPIServer struct {
	pb.UnimplementedHostAPIServer
	host   hooks.HostAPI
	grants *grants
	log    hclog.Logger
	relay  *relayLimit
	// limits are the plugin's, defaults filled in: they size the server
	// (serverOptions) and its answers.
	limits hooks.Limits
}

func (s *hostAPIServer) api(ctx context.Context) (*dispatch.ScopedHost, error) {
	if s.host == nil {
		return nil, errNoHostAPI
	}
	h, ok := s.grants.Lookup(ctx)
	if !ok {
		return nil, errNoGrant
	}
	return h, nil
}

func hostErr(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, hooks.ErrInvalidArgument):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, hooks.ErrPermissionDenied):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, dispatch.ErrOverLimit):
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

func (s *hostAPIServer) ReadEntries(ctx context.Context, req *pb.ReadEntriesRequest) (*pb.ReadEntriesResponse, error) {
	h, err := s.api(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetOffset() < 0 || req.GetLimit() < 0 {
		return nil, status.Error(codes.InvalidArgument, "offset and limit must not be negative")
	}
	entries, err := h.ReadEntries(ctx, hooks.ReadEntriesRequest{
		SessionID: req.GetSessionId(), LeafID: req.GetLeafId(), PathOnly: req.GetPathOnly(),
		Offset: int(min(req.GetOffset(), math.MaxInt32)), Limit: int(min(req.GetLimit(), math.MaxInt32)),
	})
	if err != nil {
		return nil, hostErr(err)
	}
	// An answer is at most the plugin's limits.pathEntriesBytes (what the
	// host sends it of a path with an event; readBudget): one the plugin
	// leaves unread stays in the host's memory (hostapi_bounds.go). A
	// page stops early (an empty page ends the reading), but holds at
	// least one entry if it fits the wire, so that paging reads a path
	// whatever its entries' sizes; an unpaged answer over the budget is
	// refused rather than cut without a word.
	budget, wireMax := readBudget(h.Limits()), wire.MaxMessageSize-requestSlack
	resp := &pb.ReadEntriesResponse{Entries: make([][]byte, 0, len(entries))}
	size := 0
	for _, e := range entries {
		size += len(e) + 6 // field tag and length prefix, at most
		if size > budget {
			if req.GetLimit() == 0 {
				return nil, status.Errorf(codes.ResourceExhausted, "the answer exceeds %d bytes (limits.pathEntriesBytes, 1 MiB at least); read it in pages (offset, limit)", budget)
			}
			if len(resp.Entries) > 0 || size > wireMax {
				if len(resp.Entries) == 0 {
					return nil, status.Errorf(codes.ResourceExhausted, "entry %d exceeds the maximum message size of %d bytes", req.GetOffset(), wire.MaxMessageSize)
				}
				break
			}
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

func (s *hostAPIServer) EstimateTokens(ctx context.Context, req *pb.EstimateTokensRequest) (*pb.EstimateTokensResponse, error) {
	h, err := s.api(ctx)
	if err != nil {
		return nil, err
	}
	msgs := make([]json.RawMessage, len(req.GetMessages()))
	for i, m := range req.GetMessages() {
		msgs[i] = m
	}
	n, err := h.EstimateTokens(ctx, msgs)
	if err != nil {
		return nil, hostErr(err)
	}
	resp := &pb.EstimateTokensResponse{Tokens: make([]int64, len(n))}
	for i, x := range n {
		resp.Tokens[i] = int64(x)
	}
	return resp, nil
}

func (s *hostAPIServer) Complete(ctx context.Context, req *pb.CompleteRequest) (*pb.CompleteResponse, error) {
	h, err := s.api(ctx)
	if err != nil {
		return nil, err
	}
	r, err := h.Complete(ctx, hooks.CompleteRequest{SystemPrompt: req.GetSystemPrompt(), Prompt: req.GetPrompt(), MaxTokens: int(req.GetMaxTokens())})
	if err != nil {
		return nil, hostErr(err)
	}
	return &pb.CompleteResponse{Text: r.Text, FinishReason: r.FinishReason, Model: r.Model}, nil
}

func (s *hostAPIServer) Log(ctx context.Context, req *pb.LogRequest) (*pb.LogResponse, error) {
	if _, ok := s.grants.Lookup(ctx); !ok {
		return nil, errNoGrant
	}
	if ok, _, _ := s.relay.admit(len(req.GetMessage())); !ok {
		return &pb.LogResponse{}, nil // counted; reported with the stderr drops
	}
	kv := make([]any, 0, 2*len(req.GetFields()))
	for _, f := range req.GetFields() {
		kv = append(kv, sanitize([]byte(f.GetKey())), sanitize([]byte(f.GetValue())))
	}
	s.log.Log(wire.LogLevelFromProto(req.GetLevel()), sanitize([]byte(req.GetMessage())), kv...)
	return &pb.LogResponse{}, nil
}
