package llm

import (
	"encoding/json"
	"net/http"
)

// anthropicVersion is the API version Pith speaks, sent on every request
// as the anthropic-version header (the one the SDK Pith used to link sent).
const anthropicVersion = "2026-10-21"

// The messages wire format, reduced to the fields Pith sends and reads.
// Field presence follows what the official SDK sent, so a server sees the
// same requests: a tool's description and a tool result's is_error are
// always there, an input schema only when the parameters name properties
// or required fields.

type messagesRequest struct {
	Model        string                 `json:"model"`
	MaxTokens    int64                  `json:"max_tokens"`
	System       []anthropicText        `json:"system,omitzero"`
	Messages     []anthropicMessage     `json:"messages"`
	Thinking     *anthropicThinkingWire `json:"thinking,omitzero"`
	OutputConfig *anthropicOutputConfig `json:"output_config,omitzero"`
	Tools        []anthropicTool        `json:"tools,omitzero"`
}

type anthropicMessage struct {
	Role    string `json:"role"`    // "user" or "assistant"
	Content []any  `json:"content"` // anthropicText, anthropicToolUse, anthropicToolResult
}

type anthropicText struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type anthropicToolUse struct {
	Type  string          `json:"type"` // "tool_use"
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicToolResult struct {
	Type      string          `json:"type"` // "tool_result"
	ToolUseID string          `json:"tool_use_id"`
	Content   []anthropicText `json:"content"`
	IsError   bool            `json:"is_error"`
}

func textBlock(text string) anthropicText { return anthropicText{Type: "text", Text: text} }

type anthropicThinkingWire struct {
	Type         string `json:"type"` // "enabled" or "adaptive"
	BudgetTokens int64  `json:"budget_tokens,omitzero"`
}

type anthropicOutputConfig struct {
	Effort string `json:"effort"`
}

type anthropicTool struct {
	Name        string                `json:"name"`
	Description string                `json:"description"`
	InputSchema *anthropicInputSchema `json:"input_schema,omitzero"`
}

type anthropicInputSchema struct {
	Type       string   `json:"type"` // "object"
	Properties any      `json:"properties,omitzero"`
	Required   []string `json:"required,omitzero"`
}

type messagesResponse struct {
	Model      string           `json:"model"`
	StopReason string           `json:"stop_reason"`
	Content    []anthropicBlock `json:"content"`
	Usage      struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// anthropicBlock is one content block of an answer; Pith reads text and
// tool_use blocks and skips the rest (thinking, redacted_thinking).
type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// anthropicErrorBody is the error answer:
// {"type": "error", "error": {"type", "message"}}.
type anthropicErrorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// anthropicFailure words an error answer of the messages API; without a
// message the whole body is quoted.
func anthropicFailure(model string) func(int, http.Header, []byte, string) error {
	return func(status int, header http.Header, body []byte, key string) error {
		var e anthropicErrorBody
		_ = json.Unmarshal(body, &e) // a proxy's HTML page: the body is quoted instead
		return apiError("anthropic summarizer", model, status, e.Error.Type, e.Error.Message, header, body, key)
	}
}
