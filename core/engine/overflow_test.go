package engine

import (
	"fmt"
	"testing"
)

// overflowCases are real error texts as providers (and the SDKs that relay
// them) phrase them; every row of overflowPatterns has at least one.
var overflowCases = []struct {
	provider string
	text     string
}{
	{"Anthropic", "prompt is too long: 213462 tokens > 200000 maximum"},
	{"Anthropic", `400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 201234 tokens > 200000 maximum"}}`},
	{"Anthropic (HTTP 413)", `413 {"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`},
	{"Anthropic (input + max_tokens)", "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again"},
	{"OpenAI, Azure, OpenRouter, vLLM, DeepSeek", "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages."},
	{"OpenAI, Azure, OpenRouter, vLLM, DeepSeek", "This endpoint's maximum context length is 200000 tokens. However, you requested about 251234 tokens (243042 of text input, 8192 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically."},
	{"OpenAI, Azure, OpenRouter, vLLM, DeepSeek", "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."},
	{"OpenAI, Azure, OpenRouter, vLLM, DeepSeek", "This model's maximum context length is 65536 tokens. However, you requested 70123 tokens (62123 in the messages, 8000 in the completion). Please reduce the length of the messages or completion."},
	{"OpenAI error code", `400 {"error":{"message":"Input tokens exceed the configured limit of 272000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
	{"OpenAI error code", "Error code: 400 - context length exceeded"},
	{"OpenAI Responses", "Your input exceeds the context window of this model. Please adjust your input and try again."},
	{"Google Gemini", "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)."},
	{"Google Gemini", `{"error":{"code":400,"message":"The input token count (1048999) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`},
	{"Amazon Bedrock", "ValidationException: Input is too long for requested model."},
	{"xAI", "This model's maximum prompt length is 131072 but the request contains 537812 tokens."},
	{"Groq", "Please reduce the length of the messages or completion."},
	{"Mistral", "Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum context length"},
	{"vLLM", "The decoder prompt (length 40960) is longer than the maximum model length of 32768. Make sure that `max_model_len` is no smaller than the number of text tokens."},
	{"llama.cpp", "the request exceeds the available context size, try increasing it"},
	{"LM Studio", "tokens to keep from the initial prompt is greater than the context length"},
	{"Ollama", "prompt too long; exceeded max context length by 1024 tokens"},
	{"Ollama", "prompt too long; exceeded context length by 12 tokens"},
	{"GitHub Copilot", "prompt token count of 140123 exceeds the limit of 128000"},
	{"MiniMax", "invalid params, context window exceeds limit (2013)"},
	{"Kimi", "Your request exceeded model token limit: 262144 (requested: 270000)"},
	{"z.ai", "model_context_window_exceeded"},
	{"generic", "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 5120"},
	{"generic", "token limit exceeded for this request"},
	{"HTTP 400/413 without body", "400 status code (no body)"},
	{"HTTP 400/413 without body", "413 status code (no body)"},
	{"HTTP 400/413 without body", "413"},
	{"HTTP 413", "413 Request Entity Too Large"},
	{"HTTP 413", "HTTP 413: Payload Too Large"},
}

func TestOverflowPatterns(t *testing.T) {
	for _, tc := range overflowCases {
		t.Run(tc.provider, func(t *testing.T) {
			got, ok := OverflowProvider(tc.text)
			if !ok || got != tc.provider {
				t.Errorf("%q: got (%q, %v), want %q", tc.text, got, ok, tc.provider)
			}
			if !IsContextOverflow(errorMsg(tc.text), 0) {
				t.Errorf("%q: not an overflow as an assistant error", tc.text)
			}
		})
	}
}

func TestNotOverflow(t *testing.T) {
	for _, text := range []string{
		"",
		"ThrottlingException: Too many tokens, please wait before trying again.",
		"429 Too Many Requests",
		"Rate limit reached for gpt-4o: too many tokens per minute (TPM)",
		`529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		"500 Internal Server Error",
		"400 Invalid request: messages.1.content.0.tool_use.input: Field required",
		"401 invalid x-api-key",
		"Service unavailable: the model is loading",
		"fetch failed: ECONNRESET",
		"4000 tokens were generated", // digits alone are not a status line
	} {
		if p, ok := OverflowProvider(text); ok {
			t.Errorf("%q taken for an overflow (%s)", text, p)
		}
	}
}

func TestIsContextOverflowUsage(t *testing.T) {
	msg := func(stop string, input, output, cacheRead int) []byte {
		return []byte(fmt.Sprintf(`{"role":"assistant","content":[],"usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":0},"stopReason":%q}`, input, output, cacheRead, stop))
	}
	for _, tc := range []struct {
		name   string
		msg    []byte
		window int
		want   bool
	}{
		{"silent overflow", msg("stop", 90000, 10, 20000), 100000, true},
		{"silent overflow, tool use", msg("toolUse", 100001, 10, 0), 100000, true},
		{"fits", msg("stop", 90000, 10, 9000), 100000, false},
		{"window unknown", msg("stop", 900000, 10, 0), 0, false},
		{"aborted", msg("aborted", 200000, 0, 0), 100000, false},
		{"truncated to the window, no output", msg("length", 99500, 0, 0), 100000, true},
		{"length with output", msg("length", 99500, 100, 0), 100000, false},
		{"error without pattern", []byte(`{"role":"assistant","stopReason":"error","errorMessage":"boom"}`), 100000, false},
		{"not an assistant", []byte(`{"role":"user","content":"prompt is too long"}`), 100000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsContextOverflow(tc.msg, tc.window); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEveryPatternIsTested(t *testing.T) {
	for i, p := range overflowPatterns() {
		found := false
		for _, tc := range overflowCases {
			found = found || (tc.provider == p.provider && p.re.MatchString(tc.text))
		}
		if !found {
			t.Errorf("pattern %d (%s, %s) has no real error text in overflowCases", i, p.provider, p.re)
		}
	}
}
