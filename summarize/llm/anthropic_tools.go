package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

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
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(s.model),
		MaxTokens: int64(clampTokens(req.MaxTokens, s.limit)),
	}
	if req.SystemPrompt != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.SystemPrompt}}
	}
	var pending []anthropic.ContentBlockParamUnion // the user side being gathered
	flush := func() {
		if len(pending) > 0 {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(pending...))
			pending = nil
		}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case summary.ChatUser:
			pending = append(pending, anthropic.NewTextBlock(m.Text))
		case summary.ChatTool:
			pending = append(pending, anthropic.NewToolResultBlock(m.ToolCallID, m.Text, m.IsError))
		case summary.ChatAssistant:
			flush()
			var blocks []anthropic.ContentBlockParamUnion
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				input := json.RawMessage(c.Arguments)
				if !json.Valid(input) {
					input = json.RawMessage(`{}`)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock("(no answer)"))
			}
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
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
		tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required}, t.Name)
		tool.OfTool.Description = anthropic.String(t.Description)
		params.Tools = append(params.Tools, tool)
	}
	msg, err := s.svc.New(ctx, params, option.WithAPIKey(key))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return summary.ConverseResult{}, ctxErr
		}
		return summary.ConverseResult{}, s.convertError(err, key)
	}
	out := summary.ConverseResult{FinishReason: anthropicFinish(msg.StopReason), Model: string(msg.Model)}
	if msg.StopReason == anthropic.StopReasonToolUse {
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
