package llm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

func TestOpenAISuccess(t *testing.T) {
	t.Setenv("PITH_TEST_OPENAI_KEY", testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{File: "openai_chat_completion.json"})
	// The official API's field, as the auto choice makes for api.openai.com.
	s, err := NewOpenAI(OpenAIOptions{Model: "gpt-4o", BaseURL: srv.URL() + "/v1", APIKeyEnv: "PITH_TEST_OPENAI_KEY", MaxTokensField: "max_completion_tokens"})
	if err != nil {
		t.Fatal(err)
	}
	req := testRequest
	req.MaxTokens = 100000 // over gpt-4o's 16384: must be clamped
	req.Reasoning = "high" // gpt-4o takes no reasoning_effort: must be dropped
	res, err := s.Summarize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := summary.Result{
		Text:         "## Goal\nShip the parser.",
		FinishReason: summary.FinishStop,
		Usage:        summary.Usage{Input: 93, Output: 46, CacheRead: 1024},
		Model:        "gpt-4o-2024-08-06",
	}
	if res != want {
		t.Errorf("result = %+v\nwant %+v", res, want)
	}
	got := srv.Requests()
	if len(got) != 1 {
		t.Fatalf("server got %d requests", len(got))
	}
	r := got[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" {
		t.Errorf("request = %s %s", r.Method, r.Path)
	}
	if k := headerKey(r.Header); k != testKey {
		t.Errorf("credential sent = %q", k)
	}
	checkGolden(t, "openai_request.golden.json", r.Body)
}

func TestOpenAIRequestBody(t *testing.T) {
	tests := []struct {
		name       string
		opts       OpenAIOptions
		req        summary.Request
		wantField  string // the max-tokens field expected
		wantMax    float64
		wantEffort any // nil: absent
		wantSystem bool
	}{
		{
			name:      "clamped to the built-in limit",
			opts:      OpenAIOptions{Model: "gpt-4o-mini"},
			req:       summary.Request{Prompt: "p", MaxTokens: 50000},
			wantField: "max_tokens", wantMax: 16384,
		},
		{
			name:      "clamped to the configured limit",
			opts:      OpenAIOptions{Model: "llama3.1:8b", MaxOutputTokens: 2048},
			req:       summary.Request{Prompt: "p", SystemPrompt: "s", MaxTokens: 4000},
			wantField: "max_tokens", wantMax: 2048, wantSystem: true,
		},
		{
			name:      "unknown model is not clamped",
			opts:      OpenAIOptions{Model: "qwen2.5-coder:32b"},
			req:       summary.Request{Prompt: "p", MaxTokens: 40000},
			wantField: "max_tokens", wantMax: 40000,
		},
		{
			name:      "no cap asked: default",
			opts:      OpenAIOptions{Model: "qwen2.5-coder:32b"},
			req:       summary.Request{Prompt: "p"},
			wantField: "max_tokens", wantMax: DefaultMaxTokens,
		},
		{
			name:      "field forced",
			opts:      OpenAIOptions{Model: "llama3", MaxTokensField: "max_completion_tokens"},
			req:       summary.Request{Prompt: "p", MaxTokens: 512},
			wantField: "max_completion_tokens", wantMax: 512,
		},
		{
			name:      "o-series gets reasoning_effort, minimal raised to low",
			opts:      OpenAIOptions{Model: "o3-mini"},
			req:       summary.Request{Prompt: "p", MaxTokens: 512, Reasoning: "minimal"},
			wantField: "max_completion_tokens", wantMax: 512, wantEffort: "low",
		},
		{
			name:      "gpt-5 gets reasoning_effort",
			opts:      OpenAIOptions{Model: "gpt-5-mini"},
			req:       summary.Request{Prompt: "p", MaxTokens: 512, Reasoning: "medium"},
			wantField: "max_completion_tokens", wantMax: 512, wantEffort: "medium",
		},
		{
			name:      "reasoning off sends none",
			opts:      OpenAIOptions{Model: "o3"},
			req:       summary.Request{Prompt: "p", MaxTokens: 512, Reasoning: "off"},
			wantField: "max_completion_tokens", wantMax: 512,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PITH_TEST_OPENAI_KEY", testKey)
			srv := httpfake.NewServer(t, httpfake.Reply{File: "openai_chat_completion.json"})
			opts := tt.opts
			opts.BaseURL = srv.URL() + "/v1"
			opts.APIKeyEnv = "PITH_TEST_OPENAI_KEY"
			s, err := NewOpenAI(opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Summarize(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			body := httpfake.BodyJSON(t, srv.Requests()[0].Body)
			if body["model"] != opts.Model {
				t.Errorf("model = %v", body["model"])
			}
			if body[tt.wantField] != tt.wantMax {
				t.Errorf("%s = %v, want %v (body %v)", tt.wantField, body[tt.wantField], tt.wantMax, body)
			}
			for _, f := range []string{"max_tokens", "max_completion_tokens"} {
				if _, ok := body[f]; ok && f != tt.wantField {
					t.Errorf("both %s and %s sent", f, tt.wantField)
				}
			}
			if body["reasoning_effort"] != tt.wantEffort {
				t.Errorf("reasoning_effort = %v, want %v", body["reasoning_effort"], tt.wantEffort)
			}
			msgs, _ := body["messages"].([]any)
			wantN := 1
			if tt.wantSystem {
				wantN = 2
			}
			if len(msgs) != wantN {
				t.Fatalf("messages = %v", msgs)
			}
			last, _ := msgs[len(msgs)-1].(map[string]any)
			if last["role"] != "user" || last["content"] != "p" {
				t.Errorf("user message = %v", last)
			}
			if tt.wantSystem {
				first, _ := msgs[0].(map[string]any)
				if first["role"] != "system" || first["content"] != "s" {
					t.Errorf("system message = %v", first)
				}
			}
		})
	}
}

// TestOpenAIKeyOptional: a local server reached without a key gets no
// Authorization header at all; a key that is there is still sent.
func TestOpenAIKeyOptional(t *testing.T) {
	tests := []struct {
		name     string
		keyEnv   string
		optional bool
		env      map[string]string
		wantAuth string
	}{
		{name: "explicitly optional, unset", keyEnv: "PITH_TEST_OPENAI_KEY", optional: true,
			env: map[string]string{"PITH_TEST_OPENAI_KEY": ""}},
		{name: "own base URL, no variable named, default unset",
			env: map[string]string{"OPENAI_API_KEY": ""}},
		{name: "own base URL, no variable named, default set",
			env: map[string]string{"OPENAI_API_KEY": testKey}, wantAuth: "Bearer " + testKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			srv := httpfake.NewServer(t, httpfake.Reply{File: "openai_chat_completion.json"})
			s, err := NewOpenAI(OpenAIOptions{Model: "llama3", BaseURL: srv.URL() + "/v1", APIKeyEnv: tt.keyEnv, APIKeyOptional: tt.optional})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Summarize(context.Background(), testRequest); err != nil {
				t.Fatal(err)
			}
			if h := srv.Requests()[0].Header.Get("Authorization"); h != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", h, tt.wantAuth)
			}
		})
	}
}

// TestOpenAIOfficialAPIKeyRequired: without a base URL (the official API)
// the default variable is required.
func TestOpenAIOfficialAPIKeyRequired(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	s, err := NewOpenAI(OpenAIOptions{Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Summarize(context.Background(), testRequest)
	if !errors.Is(err, summarize.ErrMissingCredential) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("err = %v, want summarize.ErrMissingCredential naming OPENAI_API_KEY", err)
	}
}

// TestOpenAIIgnoresAmbientEnvironment: the SDK's own OPENAI_* variables
// must not redirect or decorate requests.
func TestOpenAIIgnoresAmbientEnvironment(t *testing.T) {
	t.Setenv("PITH_TEST_OPENAI_KEY", testKey)
	t.Setenv("OPENAI_API_KEY", "sk-ambient-should-not-be-used")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-ambient")
	srv := httpfake.NewServer(t, httpfake.Reply{File: "openai_chat_completion.json"})
	s, err := NewOpenAI(OpenAIOptions{Model: "gpt-4o", BaseURL: srv.URL() + "/v1", APIKeyEnv: "PITH_TEST_OPENAI_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Summarize(context.Background(), testRequest); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if headerKey(h) != testKey || h.Get("OpenAI-Organization") != "" {
		t.Errorf("ambient environment leaked into the request: %v", h)
	}
}

func TestOpenAIMaxTokensField(t *testing.T) {
	tests := []struct {
		configured, baseURL, model, want string
		wantErr                          bool
	}{
		{"", DefaultOpenAIBaseURL, "gpt-4o", "max_completion_tokens", false},
		{"", "https://API.openai.com/v1", "gpt-4o", "max_completion_tokens", false},
		{"", "http://localhost:11434/v1", "llama3.1", "max_tokens", false},
		{"", "http://localhost:4000/v1", "o3-mini", "max_completion_tokens", false},
		{"", "http://localhost:4000/v1", "openai/gpt-5", "max_completion_tokens", false},
		{"max_tokens", DefaultOpenAIBaseURL, "gpt-4o", "max_tokens", false},
		{"maxTokens", DefaultOpenAIBaseURL, "gpt-4o", "", true},
	}
	for _, tt := range tests {
		got, err := openAIMaxTokensField(tt.configured, tt.baseURL, tt.model)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("openAIMaxTokensField(%q, %q, %q) = (%q, %v), want %q", tt.configured, tt.baseURL, tt.model, got, err, tt.want)
		}
	}
}

func TestOpenAIReasoningEffort(t *testing.T) {
	tests := []struct{ model, level, want string }{
		{"gpt-4o", "high", ""},
		{"gpt-4.1-mini", "low", ""},
		{"o1", "high", "high"},
		{"o1-mini", "high", ""},
		{"o1-preview", "high", ""},
		{"o3", "xhigh", "high"},
		{"o3-mini", "minimal", "low"},
		{"o4-mini-2025-04-16", "medium", "medium"},
		{"gpt-5", "minimal", "minimal"},
		{"gpt-5.1-codex", "max", "high"},
		{"GPT-5-Mini", "Low", "low"},
		{"openai/gpt-5", "high", "high"},
		{"gpt-5-chat-latest", "high", ""},
		{"gpt-5", "", ""},
		{"gpt-5", "off", ""},
		{"gpt-5", "bananas", ""},
		{"llama3.1", "high", ""},
	}
	for _, tt := range tests {
		if got := openAIReasoningEffort(tt.model, tt.level); got != tt.want {
			t.Errorf("openAIReasoningEffort(%q, %q) = %q, want %q", tt.model, tt.level, got, tt.want)
		}
	}
}

func TestOutputLimits(t *testing.T) {
	tests := []struct {
		table []prefixLimit
		model string
		want  int
	}{
		{openAIOutputLimits, "gpt-4o", 16384},
		{openAIOutputLimits, "gpt-4o-2024-05-13", 4096},
		{openAIOutputLimits, "gpt-4.1-nano", 32768},
		{openAIOutputLimits, "gpt-4", 8192},
		{openAIOutputLimits, "gpt-5-chat-latest", 16384},
		{openAIOutputLimits, "gpt-5.2", 128000},
		{openAIOutputLimits, "o1-mini", 65536},
		{openAIOutputLimits, "llama3", 0},
		{anthropicOutputLimits, "claude-opus-4-1-20250805", 32000},
		{anthropicOutputLimits, "claude-opus-4-5", 64000},
		{anthropicOutputLimits, "claude-sonnet-4-5-20250929", 64000},
		{anthropicOutputLimits, "claude-3-5-haiku-latest", 8192},
		{anthropicOutputLimits, "claude-opus-4-7", 128000},
	}
	for _, tt := range tests {
		if got := lookupLimit(tt.table, tt.model); got != tt.want {
			t.Errorf("lookupLimit(%q) = %d, want %d", tt.model, got, tt.want)
		}
	}
}
