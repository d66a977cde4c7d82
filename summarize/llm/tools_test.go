package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
	"github.com/pith-dev/pith/summarize/builtin"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

// toolConversation is a worker conversation two turns in: the model called
// two tools, both answered, and a user nudge followed.
var toolConversation = summary.ConverseRequest{
	SystemPrompt: "You explore.",
	Messages: []summary.ChatMessage{
		{Role: summary.ChatUser, Text: "overview"},
		{Role: summary.ChatAssistant, Text: "looking", ToolCalls: []summary.ToolCall{
			{ID: "call_1", Name: "search_session_log", Arguments: json.RawMessage(`{"query":"parser"}`)},
			{ID: "call_2", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
		}},
		{Role: summary.ChatTool, ToolCallID: "call_1", ToolName: "search_session_log", Text: "#3 …"},
		{Role: summary.ChatTool, ToolCallID: "call_2", ToolName: "read_file", Text: "no such file", IsError: true},
		{Role: summary.ChatUser, Text: "write the summary now"},
	},
	Tools: []summary.Tool{{
		Name: "write_summary", Description: "Store the summary.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}},
	MaxTokens: 500,
}

func TestOpenAIConverse(t *testing.T) {
	t.Setenv("PITH_TEST_OPENAI_KEY", testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{Body: `{"id":"x","object":"chat.completion","model":"m-1","choices":[{"index":0,"finish_reason":"tool_calls",
		"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"write_summary","arguments":"{\"text\":\"## Goal\"}"}}]}}],
		"usage":{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127}}`})
	s, err := NewOpenAI(OpenAIOptions{Model: "m", BaseURL: srv.URL() + "/v1", APIKeyEnv: "PITH_TEST_OPENAI_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := summary.AsToolCaller(s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tc.Converse(context.Background(), toolConversation)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "write_summary" || string(res.ToolCalls[0].Arguments) != `{"text":"## Goal"}` || res.ToolCalls[0].ID != "call_9" {
		t.Errorf("tool calls = %+v", res.ToolCalls)
	}
	if res.FinishReason != summary.FinishStop || res.Usage.Input != 120 || res.Model != "m-1" {
		t.Errorf("result = %+v", res)
	}
	body := httpfake.BodyJSON(t, srv.Requests()[0].Body)
	msgs := body["messages"].([]any)
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool,user" {
		t.Errorf("roles = %v", roles)
	}
	calls := msgs[2].(map[string]any)["tool_calls"].([]any)
	fn := calls[1].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "read_file" || fn["arguments"] != `{"path":"a.go"}` {
		t.Errorf("replayed call = %v", fn)
	}
	if msgs[3].(map[string]any)["tool_call_id"] != "call_1" {
		t.Errorf("tool result = %v", msgs[3])
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	if tool["type"] != "function" || tool["function"].(map[string]any)["name"] != "write_summary" {
		t.Errorf("tool = %v", tool)
	}
}

func TestAnthropicConverse(t *testing.T) {
	t.Setenv("PITH_TEST_ANTHROPIC_KEY", testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{Body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
		"content":[{"type":"text","text":"reading"},{"type":"tool_use","id":"toolu_1","name":"read_session_items","input":{"from":1,"to":3}}],
		"stop_reason":"tool_use","usage":{"input_tokens":200,"output_tokens":12}}`})
	s, err := NewAnthropic(AnthropicOptions{Model: "claude-x", BaseURL: srv.URL(), APIKeyEnv: "PITH_TEST_ANTHROPIC_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := summary.AsToolCaller(s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tc.Converse(context.Background(), toolConversation)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "reading" || len(res.ToolCalls) != 1 || res.ToolCalls[0].ID != "toolu_1" || string(res.ToolCalls[0].Arguments) != `{"from":1,"to":3}` {
		t.Errorf("result = %+v", res)
	}
	if res.FinishReason != summary.FinishStop || res.Usage.Input != 200 {
		t.Errorf("result = %+v", res)
	}
	body := httpfake.BodyJSON(t, srv.Requests()[0].Body)
	msgs := body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages = %v", msgs)
	}
	// user(overview) / assistant(text + 2 tool_use) / user(2 tool_result + nudge)
	last := msgs[2].(map[string]any)["content"].([]any)
	types := []string{}
	for _, b := range last {
		types = append(types, b.(map[string]any)["type"].(string))
	}
	if strings.Join(types, ",") != "tool_result,tool_result,text" {
		t.Errorf("last user blocks = %v", types)
	}
	if last[1].(map[string]any)["is_error"] != true || last[0].(map[string]any)["tool_use_id"] != "call_1" {
		t.Errorf("tool results = %v", last)
	}
	uses := msgs[1].(map[string]any)["content"].([]any)
	if uses[1].(map[string]any)["type"] != "tool_use" || uses[1].(map[string]any)["input"].(map[string]any)["query"] != "parser" {
		t.Errorf("assistant blocks = %v", uses)
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	if tool["name"] != "write_summary" || tool["input_schema"].(map[string]any)["required"].([]any)[0] != "text" {
		t.Errorf("tool = %v", tool)
	}
}

func TestChainConverseSkipsBuiltin(t *testing.T) {
	local := builtin.New(builtin.Options{})
	if _, err := summary.AsToolCaller(local); err == nil {
		t.Error("the built-in summarizer claims to call tools")
	}
	chain := &summarize.Chain{Candidates: []summarize.Candidate{{Name: "builtin", Summarizer: local}}}
	if _, err := summary.AsToolCaller(chain); err == nil {
		t.Error("a chain of the built-in summarizer claims to call tools")
	}
}
