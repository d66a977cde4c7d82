package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
)

// Converse implements summary.ToolCaller over the messages API with
// tool_use / tool_result blocks. Tool results and a following user text
// are sent as one user message, as the API wants turns to alternate.
// Extended thinking is not requested here: with tools it would have to be
// replayed block for block, signatures included, on every turn.
func (s *anthropicSummarizer) Converse(ctx context.Context, req summary.ConverseRequest) (summary.ConverseResult, error) {
	key := os.Getenv(s.keyEnv)
	if key == "" {
		return summary.ConverseResult{}, fmt.Errorf("anthropic summarizer: environment variable %s is not set: %w", s.keyEnv, summarize.ErrMissingCredential)
	}
	params := messagesRequest{
		Model:     s.model,
		MaxTokens: int64(clampTokens(req.MaxTokens, s.limit)),
	}
	if req.SystemPrompt != "" {
		params.System = []anthropicText{textBlock(req.SystemPrompt)}
	}
	var pending []any // the user side being gathered
	flush := func() {
		if len(pending) > 0 {
			params.Messages = append(params.Messages, anthropicMessage{Role: "user", Content: pending})
			pending = nil
		}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case summary.ChatUser:
			pending = append(pending, textBlock(m.Text))
		case summary.ChatTool:
			pending = append(pending, anthropicToolResult{
				Type:      "tool_result",
				ToolUseID: m.ToolCallID,
				Content:   []anthropicText{textBlock(m.Text)},
				IsError:   m.IsError,
			})
		case summary.ChatAssistant:
			flush()
			var blocks []any
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, textBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				input := json.RawMessage(c.Arguments)
				if !json.Valid(input) {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, anthropicToolUse{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
			}
			if len(blocks) == 0 {
				blocks = append(blocks, textBlock("(no answer)"))
			}
			params.Messages = append(params.Messages, anthropicMessage{Role: "assistant", Content: blocks})
		default:
			return summary.ConverseResult{}, fmt.Errorf("anthropic summarizer: unknown chat role %q", m.Role)
		}
	}
	flush()
	for _, t := range req.Tools {
		var schema struct {
			Properties any      `json:"properties"`
			Required   []string `json:"required"`
		}
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return summary.ConverseResult{}, fmt.Errorf("anthropic summarizer: tool %s: parameters: %w", t.Name, err)
			}
		}
		tool := anthropicTool{Name: t.Name, Description: t.Description}
		if schema.Properties != nil || schema.Required != nil {
			tool.InputSchema = &anthropicInputSchema{Type: "object", Properties: schema.Properties, Required: schema.Required}
		}
		params.Tools = append(params.Tools, tool)
	}
	msg, err := s.send(ctx, &params, key)
	if err != nil {
		return summary.ConverseResult{}, err
	}
	out := summary.ConverseResult{FinishReason: anthropicFinish(msg.StopReason), Model: msg.Model}
	if msg.StopReason == "tool_use" {
		out.FinishReason = summary.FinishStop
	}
	var text strings.Builder
	for _, block := range msg.Content {
		switch block.Type {
		case "text":
			text.WriteString(block.Text)
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, summary.ToolCall{ID: block.ID, Name: block.Name, Arguments: block.Input})
		}
	}
	out.Text = text.String()
	if out.Model == "" {
		out.Model = s.model
	}
	u := msg.Usage
	out.Usage = summary.Usage{
		Input:      int(u.InputTokens),
		Output:     int(u.OutputTokens),
		CacheRead:  int(u.CacheReadInputTokens),
		CacheWrite: int(u.CacheCreationInputTokens),
	}
	return out, nil
}
