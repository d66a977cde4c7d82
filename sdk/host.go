package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc/metadata"
)

// ErrNoHost is returned by the HostAPI of a handler context that has none
// (a handler called outside Serve or a test harness).
var ErrNoHost = errors.New("sdk: no host API in this context")

// Host returns the host's API for the running handler: read the session's
// entries, estimate tokens, run a completion on the host's summarizer, log.
// Outside a handler its methods fail with ErrNoHost.
func Host(ctx context.Context) HostAPI {
	if h, ok := hooks.HostFromContext(ctx); ok {
		return h
	}
	return noHost{}
}

type noHost struct{}

func (noHost) ReadEntries(context.Context, hooks.ReadEntriesRequest) ([]json.RawMessage, error) {
	return nil, ErrNoHost
}

func (noHost) EstimateTokens(context.Context, []json.RawMessage) ([]int, error) {
	return nil, ErrNoHost
}

func (noHost) Complete(context.Context, hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	return hooks.CompleteResponse{}, ErrNoHost
}

func (noHost) Log(context.Context, hclog.Level, string, ...any) error { return ErrNoHost }

// hostClient is the HostAPI over the connection to the host, presenting the
// capability of the call being served.
type hostClient struct {
	c     pb.HostAPIClient
	token string
}

func newHostClient(c pb.HostAPIClient) *hostClient { return &hostClient{c: c} }

// withCapability returns the client for one call's capability.
func (h *hostClient) withCapability(token string) *hostClient {
	return &hostClient{c: h.c, token: token}
}

func (h *hostClient) out(ctx context.Context) context.Context {
	if h.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, wire.CapabilityKey, h.token)
}

func (h *hostClient) ReadEntries(ctx context.Context, req hooks.ReadEntriesRequest) ([]json.RawMessage, error) {
	resp, err := h.c.ReadEntries(h.out(ctx), &pb.ReadEntriesRequest{SessionId: req.SessionID, LeafId: req.LeafID, PathOnly: req.PathOnly, Offset: int64(req.Offset), Limit: int64(req.Limit)})
	if err != nil {
		return nil, fmt.Errorf("host ReadEntries: %w", err)
	}
	out := make([]json.RawMessage, len(resp.GetEntries()))
	for i, e := range resp.GetEntries() {
		out[i] = e
	}
	return out, nil
}

func (h *hostClient) EstimateTokens(ctx context.Context, messages []json.RawMessage) ([]int, error) {
	req := &pb.EstimateTokensRequest{Messages: make([][]byte, len(messages))}
	for i, m := range messages {
		req.Messages[i] = m
	}
	resp, err := h.c.EstimateTokens(h.out(ctx), req)
	if err != nil {
		return nil, fmt.Errorf("host EstimateTokens: %w", err)
	}
	out := make([]int, len(resp.GetTokens()))
	for i, n := range resp.GetTokens() {
		out[i] = int(n)
	}
	return out, nil
}

func (h *hostClient) Complete(ctx context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	resp, err := h.c.Complete(h.out(ctx), &pb.CompleteRequest{SystemPrompt: req.SystemPrompt, Prompt: req.Prompt, MaxTokens: int64(req.MaxTokens)})
	if err != nil {
		return hooks.CompleteResponse{}, fmt.Errorf("host Complete: %w", err)
	}
	return hooks.CompleteResponse{Text: resp.GetText(), FinishReason: resp.GetFinishReason(), Model: resp.GetModel()}, nil
}

func (h *hostClient) Log(ctx context.Context, level hclog.Level, msg string, keyvals ...any) error {
	req := &pb.LogRequest{Level: wire.LogLevelToProto(level), Message: msg}
	for i := 0; i < len(keyvals); i += 2 {
		k := fmt.Sprint(keyvals[i])
		v := "(missing)"
		if i+1 < len(keyvals) {
			v = fmt.Sprint(keyvals[i+1])
		}
		req.Fields = append(req.Fields, &pb.KeyValue{Key: k, Value: v})
	}
	if _, err := h.c.Log(h.out(ctx), req); err != nil {
		return fmt.Errorf("host Log: %w", err)
	}
	return nil
}
