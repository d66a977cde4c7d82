package client

import (
	"context"

	pb "github.com/pith-dev/pith/proto/pith/session/v1"
)

// LLMContext returns the live context converted for a model: only user,
// assistant and toolResult messages, the summaries and custom messages
// wrapped as user messages (see GetContextRequest.llm in the proto), ready
// to send as they are.
func (s *Session) LLMContext(ctx context.Context) (*Context, error) {
	r, err := s.c.rpc.GetContext(ctx, &pb.GetContextRequest{SessionId: s.ID, Llm: true})
	if err != nil {
		return nil, wrap("context", err)
	}
	return &Context{
		Messages: rawsOf(r.GetMessages()), Tokens: int(r.GetContextTokens()), Provider: r.GetProvider(), ModelID: r.GetModelId(),
		ThinkingLevel: r.GetThinkingLevel(), LeafID: r.GetLeafId(), AutoCompactionDisabled: r.GetAutoCompactionDisabled(),
	}, nil
}
