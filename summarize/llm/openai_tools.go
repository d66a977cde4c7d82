package llm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pith-dev/pith/core/summary"
)

// Converse implements summary.ToolCaller over chat completions with
// function tools: the history is replayed each turn (the API is stateless),
// assistant turns with their tool_calls, each result as a tool message.
func (s *openAISummarizer) Converse(ctx context.Context, req summary.ConverseRequest) (summary.ConverseResult, error) {
	key, err := s.apiKey()
	if err != nil {
		return summary.ConverseResult{}, err
	}
	params := chatRequest{Model: s.model}
	if req.SystemPrompt != "" {
		params.Messages = append(params.Messages, chatText("system", req.SystemPrompt))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case summary.ChatUser:
			params.Messages = append(params.Messages, chatText("user", m.Text))
		case summary.ChatTool:
			msg := chatText("tool", m.Text)
			msg.ToolCallID = &m.ToolCallID
			params.Messages = append(params.Messages, msg)
		case summary.ChatAssistant:
			a := chatMessage{Role: "assistant"}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				// An assistant message needs content unless it has calls.
				a.Content = &m.Text
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, chatToolCall{
					ID:       c.ID,
					Type:     "function",
					Function: chatFunction{Name: c.Name, Arguments: string(c.Arguments)},
				})
			}
			params.Messages = append(params.Messages, a)
		default:
			return summary.ConverseResult{}, fmt.Errorf("openai summarizer: unknown chat role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		var schema map[string]any
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return summary.ConverseResult{}, fmt.Errorf("openai summarizer: tool %s: parameters: %w", t.Name, err)
			}
		}
		params.Tools = append(params.Tools, chatTool{
			Type:     "function",
			Function: chatFunctionDef{Name: t.Name, Description: t.Description, Parameters: schema},
		})
	}
	resp, err := s.complete(ctx, &params, key, req.MaxTokens, req.Reasoning)
	if err != nil {
		return summary.ConverseResult{}, err
	}
	choice := resp.Choices[0]
	out := summary.ConverseResult{
		Text:         choice.Message.Content,
		FinishReason: openAIFinish(choice.FinishReason),
		Model:        resp.Model,
	}
	if choice.FinishReason == "tool_calls" {
		out.FinishReason = summary.FinishStop
	}
	for _, c := range choice.Message.ToolCalls {
		if c.Type != "" && c.Type != "function" {
			continue // custom tools are never offered
		}
		out.ToolCalls = append(out.ToolCalls, summary.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
	}
	if out.Model == "" {
		out.Model = s.model
	}
	u := resp.Usage
	cached := int(u.PromptTokensDetails.CachedTokens)
	out.Usage = summary.Usage{
		Input:      max(0, int(u.PromptTokens)-cached),
		Output:     int(u.CompletionTokens),
		CacheRead:  cached,
		CacheWrite: int(u.PromptTokensDetails.CacheWriteTokens),
	}
	return out, nil
}
