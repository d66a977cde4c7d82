package llm

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// The chat-completions wire format, reduced to the fields Pith sends and
// reads. Field presence follows what the official SDK sent, so a server
// sees the same requests: content is omitted only on an assistant turn that
// carries tool calls, a tool's description and a tool message's
// tool_call_id are always there.

type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxTokens           int64         `json:"max_tokens,omitzero"`
	MaxCompletionTokens int64         `json:"max_completion_tokens,omitzero"`
	ReasoningEffort     string        `json:"reasoning_effort,omitzero"`
	Tools               []chatTool    `json:"tools,omitzero"`
}

type chatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitzero"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitzero"`
	ToolCallID *string        `json:"tool_call_id,omitzero"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON document, as a string
}

type chatTool struct {
	Type     string          `json:"type"` // "function"
	Function chatFunctionDef `json:"function"`
}

type chatFunctionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters,omitzero"` // JSON Schema
}

func chatText(role, text string) chatMessage {
	return chatMessage{Role: role, Content: &text}
}

type chatResponse struct {
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

type chatChoice struct {
	FinishReason string `json:"finish_reason"`
	Message      struct {
		Content   string         `json:"content"` // null with tool calls
		ToolCalls []chatToolCall `json:"tool_calls"`
	} `json:"message"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

// chatErrorBody is the error answer: {"error": {"message", "type", "code"}}.
// The code may be a string or a number.
type chatErrorBody struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// openAIFailure words an error answer of the chat-completions API. The code
// is the finer grain: a 429's type may only say "tokens" while its code
// tells rate_limit_exceeded from insufficient_quota.
func openAIFailure(model string) func(int, http.Header, []byte, string) error {
	return func(status int, header http.Header, body []byte, key string) error {
		var e chatErrorBody
		_ = json.Unmarshal(body, &e) // a proxy's HTML page: the body is quoted instead
		kind := errorCode(e.Error.Code)
		if kind == "" {
			kind = e.Error.Type
		}
		return apiError("openai summarizer", model, status, kind, e.Error.Message, header, body, key)
	}
}

// errorCode reads a code that is a JSON string or number; "" otherwise.
func errorCode(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if _, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return string(raw)
	}
	return ""
}
