package llm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

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
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(s.model)}
	if req.SystemPrompt != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.SystemPrompt))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case summary.ChatUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Text))
		case summary.ChatTool:
			params.Messages = append(params.Messages, openai.ToolMessage(m.Text, m.ToolCallID))
		case summary.ChatAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				// An assistant message needs content unless it has calls.
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Arguments)},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return summary.ConverseResult{}, fmt.Errorf("openai summarizer: unknown chat role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		var schema shared.FunctionParameters
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return summary.ConverseResult{}, fmt.Errorf("openai summarizer: tool %s: parameters: %w", t.Name, err)
			}
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  schema,
		}))
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
