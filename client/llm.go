package client

import "context"

// LLMContext returns the live context converted for a model: only user,
// assistant and toolResult messages, the summaries and custom messages
// wrapped as user messages (see GetContextRequest.llm in the proto), ready
// to send as they are.
func (s *Session) LLMContext(ctx context.Context) (*Context, error) {
	return s.getContext(ctx, true)
}
