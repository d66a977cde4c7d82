package llm

import (
	"context"
	"testing"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

func newTestAnthropic(t *testing.T, baseURL, model string) summary.Summarizer {
	t.Helper()
	return newTestAnthropicLimit(t, baseURL, model, 0)
}

func newTestAnthropicLimit(t *testing.T, baseURL, model string, limit int) summary.Summarizer {
	t.Helper()
	s, err := NewAnthropic(AnthropicOptions{Model: model, BaseURL: baseURL, APIKeyEnv: "PITH_TEST_ANTHROPIC_KEY", MaxOutputTokens: limit})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAnthropicSuccess(t *testing.T) {
	t.Setenv("PITH_TEST_ANTHROPIC_KEY", testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{File: "anthropic_message.json"})
	req := testRequest
	req.MaxTokens = 100000 // over claude-3-5-haiku's 8192: must be clamped
	req.Reasoning = "high" // claude-3-5-haiku has no extended thinking: dropped
	res, err := newTestAnthropic(t, srv.URL(), "claude-3-5-haiku-latest").Summarize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := summary.Result{
		Text:         "## Goal\nShip the parser.",
		FinishReason: summary.FinishStop,
		Usage:        summary.Usage{Input: 2095, Output: 503, CacheRead: 1500, CacheWrite: 12},
		Model:        "claude-sonnet-4-5-20250929",
	}
	if res != want {
		t.Errorf("result = %+v\nwant %+v", res, want)
	}
	got := srv.Requests()
	if len(got) != 1 {
		t.Fatalf("server got %d requests", len(got))
	}
	r := got[0]
	if r.Method != "POST" || r.Path != "/v1/messages" {
		t.Errorf("request = %s %s", r.Method, r.Path)
	}
	if k := headerKey(r.Header); k != testKey {
		t.Errorf("credential sent = %q", k)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	checkGolden(t, "anthropic_request.golden.json", r.Body)
}

func TestAnthropicThinking(t *testing.T) {
	tests := []struct {
		name       string
		model      string
		limit      int
		req        summary.Request
		wantMax    float64
		wantType   any // thinking.type; nil: no thinking field
		wantBudget any
		wantEffort any
	}{
		{
			name:    "no reasoning asked",
			model:   "claude-sonnet-4-5",
			req:     summary.Request{Prompt: "p", MaxTokens: 4000},
			wantMax: 4000,
		},
		{
			name:       "budget-based model adds the budget on top",
			model:      "claude-sonnet-4-5-20250929",
			req:        summary.Request{Prompt: "p", MaxTokens: 4000, Reasoning: "medium"},
			wantMax:    12192,
			wantType:   "enabled",
			wantBudget: 8192.0,
		},
		{
			name:       "budget squeezed by the model limit",
			model:      "claude-opus-4-1",
			req:        summary.Request{Prompt: "p", MaxTokens: 30000, Reasoning: "high"},
			wantMax:    32000,
			wantType:   "enabled",
			wantBudget: 16384.0,
		},
		{
			name:       "budget shrunk to leave the text room",
			model:      "claude-3-7-sonnet-latest",
			limit:      4000,
			req:        summary.Request{Prompt: "p", MaxTokens: 1000, Reasoning: "medium"},
			wantMax:    4000,
			wantType:   "enabled",
			wantBudget: 2976.0,
		},
		{
			name:    "no room for the minimum budget: thinking dropped",
			model:   "claude-3-7-sonnet-latest",
			limit:   1500,
			req:     summary.Request{Prompt: "p", MaxTokens: 1000, Reasoning: "medium"},
			wantMax: 1000,
		},
		{
			name:       "adaptive model",
			model:      "claude-opus-4-6",
			req:        summary.Request{Prompt: "p", MaxTokens: 4000, Reasoning: "xhigh"},
			wantMax:    20384,
			wantType:   "adaptive",
			wantEffort: "high",
		},
		{
			name:    "model without thinking",
			model:   "claude-3-5-sonnet-20241022",
			req:     summary.Request{Prompt: "p", MaxTokens: 4000, Reasoning: "high"},
			wantMax: 4000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PITH_TEST_ANTHROPIC_KEY", testKey)
			srv := httpfake.NewServer(t, httpfake.Reply{File: "anthropic_message_thinking.json"})
			res, err := newTestAnthropicLimit(t, srv.URL(), tt.model, tt.limit).Summarize(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			// Thinking blocks are skipped, text blocks joined.
			if res.Text != "## Goal\nShip the parser." {
				t.Errorf("Text = %q", res.Text)
			}
			body := httpfake.BodyJSON(t, srv.Requests()[0].Body)
			if body["model"] != tt.model || body["max_tokens"] != tt.wantMax {
				t.Errorf("model %v max_tokens %v, want %s %v", body["model"], body["max_tokens"], tt.model, tt.wantMax)
			}
			thinking, _ := body["thinking"].(map[string]any)
			var gotType, gotBudget any
			if thinking != nil {
				gotType, gotBudget = thinking["type"], thinking["budget_tokens"]
			}
			if gotType != tt.wantType || gotBudget != tt.wantBudget {
				t.Errorf("thinking = %v, want type %v budget %v", body["thinking"], tt.wantType, tt.wantBudget)
			}
			var gotEffort any
			if oc, ok := body["output_config"].(map[string]any); ok {
				gotEffort = oc["effort"]
			}
			if gotEffort != tt.wantEffort {
				t.Errorf("output_config = %v, want effort %v", body["output_config"], tt.wantEffort)
			}
		})
	}
}

func TestAnthropicIgnoresAmbientEnvironment(t *testing.T) {
	t.Setenv("PITH_TEST_ANTHROPIC_KEY", testKey)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-ambient-should-not-be-used")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Ambient: yes")
	srv := httpfake.NewServer(t, httpfake.Reply{File: "anthropic_message.json"})
	if _, err := newTestAnthropic(t, srv.URL(), "claude-sonnet-4-5").Summarize(context.Background(), testRequest); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if headerKey(h) != testKey || h.Get("X-Ambient") != "" {
		t.Errorf("ambient environment leaked into the request: %v", h)
	}
}

func TestAnthropicFinish(t *testing.T) {
	tests := map[string]summary.FinishReason{
		"end_turn":                      summary.FinishStop,
		"stop_sequence":                 summary.FinishStop,
		"max_tokens":                    summary.FinishLength,
		"refusal":                       summary.FinishOther,
		"tool_use":                      summary.FinishOther,
		"model_context_window_exceeded": summary.FinishOther,
	}
	for in, want := range tests {
		if got := anthropicFinish(in); got != want {
			t.Errorf("anthropicFinish(%q) = %q, want %q", in, got, want)
		}
	}
}
