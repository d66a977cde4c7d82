package llm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/summarize"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

// TestRecordedErrorBodies: each error body recorded from the real APIs,
// served with its status, gives the provider's own type (OpenAI's code
// when it has one) and message in the *summarize.APIError.
func TestRecordedErrorBodies(t *testing.T) {
	tests := []struct {
		harness     int // index in harnesses
		file        string
		status      int
		wantType    string
		wantMessage string // a prefix
	}{
		{0, "openai_error_rate_limit.json", 429, "rate_limit_exceeded", "Rate limit reached for gpt-4o"},
		{0, "openai_error_quota.json", 429, "insufficient_quota", "You exceeded your current quota"},
		{0, "openai_error_invalid_key.json", 401, "invalid_api_key", "Incorrect API key provided: [redacted]."},
		{0, "openai_error_server.json", 500, "server_error", "The server had an error"},
		{1, "anthropic_error_rate_limit.json", 429, "rate_limit_error", "This request would exceed the rate limit"},
		{1, "anthropic_error_auth.json", 401, "authentication_error", "invalid x-api-key: [redacted]"},
		{1, "anthropic_error_invalid_request.json", 400, "invalid_request_error", "max_tokens: 200000 > 64000"},
		{1, "anthropic_error_overloaded.json", 529, "overloaded_error", "Overloaded"},
		{1, "anthropic_error_api.json", 500, "api_error", "Internal server error"},
	}
	for _, tt := range tests {
		h := harnesses[tt.harness]
		t.Run(tt.file, func(t *testing.T) {
			t.Setenv(h.keyEnv, testKey)
			srv := httpfake.NewServer(t, httpfake.Reply{Status: tt.status, File: tt.file})
			_, err := h.newSumm(t, srv.URL(), 0).Summarize(context.Background(), testRequest)
			var ae *summarize.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want a *summarize.APIError", err)
			}
			if ae.StatusCode != tt.status || ae.Type != tt.wantType || !strings.HasPrefix(ae.Message, tt.wantMessage) {
				t.Errorf("APIError = %+v, want status %d, type %q, message %q…", ae, tt.status, tt.wantType, tt.wantMessage)
			}
			if strings.Contains(ae.Message, testKey) {
				t.Errorf("message leaks the key: %s", ae.Message)
			}
		})
	}
}

// TestEndpoint: the API root is a directory whether or not it ends in a
// slash, as with the SDKs Pith used before.
func TestEndpoint(t *testing.T) {
	tests := []struct{ base, path, want string }{
		{"https://api.openai.com/v1", "chat/completions", "https://api.openai.com/v1/chat/completions"},
		{"http://localhost:11434/v1/", "chat/completions", "http://localhost:11434/v1/chat/completions"},
		{"https://api.anthropic.com", "v1/messages", "https://api.anthropic.com/v1/messages"},
		{"http://127.0.0.1:8080/proxy/anthropic/", "v1/messages", "http://127.0.0.1:8080/proxy/anthropic/v1/messages"},
	}
	for _, tt := range tests {
		got, err := endpoint(tt.base, tt.path)
		if err != nil || got != tt.want {
			t.Errorf("endpoint(%q, %q) = %q, %v; want %q", tt.base, tt.path, got, err, tt.want)
		}
	}
}

// TestAnthropicHeaders: the key and the API version travel as the SDK Pith
// used to link sent them.
func TestAnthropicHeaders(t *testing.T) {
	t.Setenv("PITH_TEST_ANTHROPIC_KEY", testKey)
	srv := httpfake.NewServer(t, httpfake.Reply{File: "anthropic_message.json"})
	if _, err := newTestAnthropic(t, srv.URL(), "claude-sonnet-4-5").Summarize(context.Background(), testRequest); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "Bearer "+testKey || h.Get("Anthropic-Version") != anthropicVersion || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", h)
	}
}
