package summary

import (
	"context"
	"encoding/json"
	"errors"
)

// ErrNoToolCalling is returned when a conversation with tools is asked of a
// summarizer that cannot call tools (the built-in one, a remote endpoint).
var ErrNoToolCalling = errors.New("the summarizer cannot call tools")

// Tool is a function offered to a model: its name, what it does, and a JSON
// Schema object for its arguments.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ChatRole is the role of one message of a tool conversation.
type ChatRole string

const (
	ChatUser      ChatRole = "user"
	ChatAssistant ChatRole = "assistant"
	// ChatTool is the result of one tool call; ToolCallID names the call.
	ChatTool ChatRole = "tool"
)

// ChatMessage is one message of a tool conversation. An assistant message
// carries the text the model wrote and the tool calls it made; a tool
// message answers one call.
type ChatMessage struct {
	Role       ChatRole
	Text       string
	ToolCalls  []ToolCall
	ToolCallID string
	// ToolName is the called tool's name, for providers that want it with
	// the result.
	ToolName string
	// IsError marks a tool result that reports a failure.
	IsError bool
}

// ToolCall is a model's request to run a tool. Arguments are the raw JSON
// object the model wrote, which may be malformed: the caller validates it.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ConverseRequest is one turn of a tool conversation: the whole history so
// far (the providers are stateless), the tools on offer and the output cap.
type ConverseRequest struct {
	SystemPrompt string
	Messages     []ChatMessage
	Tools        []Tool
	MaxTokens    int
	Reasoning    string
}

// ConverseResult is the model's answer to one turn.
type ConverseResult struct {
	Text         string
	ToolCalls    []ToolCall
	FinishReason FinishReason
	Usage        Usage
	Model        string
}

// ToolCaller is a model that can hold a conversation with tool calls. The
// OpenAI-compatible and Anthropic providers implement it next to
// Summarizer; summarize's Chain implements it over those of its
// candidates that do.
type ToolCaller interface {
	Converse(ctx context.Context, req ConverseRequest) (ConverseResult, error)
}

// ToolCallChecker is implemented by wrappers (Chain, a hot-swapped
// summarizer) that have a Converse method but can call tools only when what
// they wrap can.
type ToolCallChecker interface {
	CallsTools() bool
}

// AsToolCaller returns s as a ToolCaller, or ErrNoToolCalling when it
// cannot call tools.
func AsToolCaller(s Summarizer) (ToolCaller, error) {
	tc, ok := s.(ToolCaller)
	if !ok {
		return nil, ErrNoToolCalling
	}
	if c, ok := s.(ToolCallChecker); ok && !c.CallsTools() {
		return nil, ErrNoToolCalling
	}
	return tc, nil
}
