package llm

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

// providerHarness lets the error-path tests run the same scenarios against
// both SDK-based providers, each served in its own wire format.
type providerHarness struct {
	name    string
	keyEnv  string
	path    string // the API path the provider must call
	newSumm func(t *testing.T, baseURL string, timeout time.Duration) summary.Summarizer
	// files of the provider's own wire format
	success, cutOff               string
	rateLimit, server, badRequest string
	badKey, overloaded            string
	quota                         string // optional: permanent 429
}

var harnesses = []providerHarness{
	{
		name:   "openai",
		keyEnv: "PITH_TEST_OPENAI_KEY",
		path:   "/v1/chat/completions",
		newSumm: func(t *testing.T, baseURL string, timeout time.Duration) summary.Summarizer {
			t.Helper()
			s, err := NewOpenAI(OpenAIOptions{Model: "gpt-4o", BaseURL: baseURL + "/v1", APIKeyEnv: "PITH_TEST_OPENAI_KEY", Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		success:    "openai_chat_completion.json",
		cutOff:     "openai_chat_completion_length.json",
		rateLimit:  "openai_error_rate_limit.json",
		server:     "openai_error_server.json",
		badRequest: "openai_error_invalid_key.json",
		badKey:     "openai_error_invalid_key.json",
		overloaded: "openai_error_server.json",
		quota:      "openai_error_quota.json",
	},
	{
		name:   "anthropic",
		keyEnv: "PITH_TEST_ANTHROPIC_KEY",
		path:   "/v1/messages",
		newSumm: func(t *testing.T, baseURL string, timeout time.Duration) summary.Summarizer {
			t.Helper()
			s, err := NewAnthropic(AnthropicOptions{Model: "claude-sonnet-4-5", BaseURL: baseURL, APIKeyEnv: "PITH_TEST_ANTHROPIC_KEY", Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		success:    "anthropic_message.json",
		cutOff:     "anthropic_message_max_tokens.json",
		rateLimit:  "anthropic_error_rate_limit.json",
		server:     "anthropic_error_api.json",
		badRequest: "anthropic_error_invalid_request.json",
		badKey:     "anthropic_error_auth.json",
		overloaded: "anthropic_error_overloaded.json",
	},
}

// TestProviderErrors runs each failure scenario against each provider and
// checks the classification and the error text.
func TestProviderErrors(t *testing.T) {
	type scenario struct {
		name          string
		script        func(h providerHarness) []httpfake.Reply
		timeout       time.Duration
		wantTransient bool
		wantAfter     time.Duration
		wantIs        error
		wantText      []string // substrings of the error line
	}
	scenarios := []scenario{
		{
			name: "429 with retry-after seconds",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Status: 429, File: h.rateLimit, Headers: map[string]string{"Retry-After": "7"}}}
			},
			wantTransient: true, wantAfter: 7 * time.Second, wantIs: summarize.ErrTransient,
			wantText: []string{"429", "rate limit"},
		},
		{
			name: "429 with retry-after-ms wins",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Status: 429, File: h.rateLimit, Headers: map[string]string{"Retry-After": "7", "retry-after-ms": "2152"}}}
			},
			wantTransient: true, wantAfter: 2152 * time.Millisecond, wantIs: summarize.ErrTransient,
		},
		{
			name: "500",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Status: 500, File: h.server}}
			},
			wantTransient: true, wantIs: summarize.ErrTransient, wantText: []string{"500"},
		},
		{
			name: "529 overloaded",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Status: 529, File: h.overloaded}}
			},
			wantTransient: true, wantIs: summarize.ErrTransient, wantText: []string{"529"},
		},
		{
			name: "502 from a proxy with an HTML body",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Status: 502, Body: "<html><body>502 Bad Gateway</body></html>"}}
			},
			wantTransient: true, wantIs: summarize.ErrTransient, wantText: []string{"502"},
		},
		{
			name: "400 is permanent",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Status: 400, File: h.badRequest}}
			},
			wantTransient: false, wantText: []string{"400"},
		},
		{
			name: "401 echoing the key is permanent and redacted",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Status: 401, File: h.badKey}}
			},
			wantTransient: false, wantText: []string{"401", "[redacted]"},
		},
		{
			name: "timeout",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Hang: true}}
			},
			timeout:       200 * time.Millisecond,
			wantTransient: true, wantIs: summarize.ErrTransient,
		},
		{
			name: "connection dropped",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Close: true}}
			},
			wantTransient: true, wantIs: summarize.ErrTransient,
		},
		{
			name: "malformed JSON body",
			script: func(h providerHarness) []httpfake.Reply {
				return []httpfake.Reply{{Status: 200, Body: `{"id": "x", "choices": [`, Headers: map[string]string{"Content-Type": "application/json"}}}
			},
			wantTransient: false, wantIs: summarize.ErrBadResponse,
		},
	}
	for _, h := range harnesses {
		for _, sc := range scenarios {
			t.Run(h.name+"/"+sc.name, func(t *testing.T) {
				t.Setenv(h.keyEnv, testKey)
				srv := httpfake.NewServer(t, sc.script(h)...)
				timeout := sc.timeout
				if timeout == 0 {
					timeout = 10 * time.Second
				}
				s := h.newSumm(t, srv.URL(), timeout)
				_, err := s.Summarize(context.Background(), testRequest)
				if err == nil {
					t.Fatal("want an error")
				}
				transient, after := summarize.Classify(err)
				if transient != sc.wantTransient {
					t.Errorf("Classify transient = %v, want %v (err: %v)", transient, sc.wantTransient, err)
				}
				if after != sc.wantAfter {
					t.Errorf("Classify retryAfter = %v, want %v", after, sc.wantAfter)
				}
				if sc.wantIs != nil && !errors.Is(err, sc.wantIs) {
					t.Errorf("errors.Is(%v, %v) = false", err, sc.wantIs)
				}
				if !sc.wantTransient && errors.Is(err, summarize.ErrTransient) {
					t.Errorf("permanent error wrapped as transient: %v", err)
				}
				t.Logf("error line: %v", err)
				line := err.Error()
				if strings.Contains(line, testKey) {
					t.Errorf("error text leaks the key: %s", line)
				}
				if strings.Contains(line, "\n") {
					t.Errorf("error text is not one line: %q", line)
				}
				for _, w := range sc.wantText {
					if !strings.Contains(strings.ToLower(line), strings.ToLower(w)) {
						t.Errorf("error %q does not mention %q", line, w)
					}
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("server got %d requests, want 1 (SDK retries must be off)", n)
				}
			})
		}
	}
}

func TestProviderQuotaExhaustedIsPermanent(t *testing.T) {
	for _, h := range harnesses {
		if h.quota == "" {
			continue
		}
		t.Run(h.name, func(t *testing.T) {
			t.Setenv(h.keyEnv, testKey)
			srv := httpfake.NewServer(t, httpfake.Reply{Status: 429, File: h.quota})
			_, err := h.newSumm(t, srv.URL(), 0).Summarize(context.Background(), testRequest)
			if transient, _ := summarize.Classify(err); err == nil || transient {
				t.Fatalf("exhausted quota: err %v, transient %v; want a permanent error", err, transient)
			}
		})
	}
}

func TestProviderCutOffIsAResultNotAnError(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			t.Setenv(h.keyEnv, testKey)
			srv := httpfake.NewServer(t, httpfake.Reply{File: h.cutOff})
			res, err := h.newSumm(t, srv.URL(), 0).Summarize(context.Background(), testRequest)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != summary.FinishLength {
				t.Errorf("FinishReason = %q, want %q", res.FinishReason, summary.FinishLength)
			}
			if res.Text != "## Goal\nShip the par" {
				t.Errorf("Text = %q", res.Text)
			}
		})
	}
}

func TestProviderMissingKey(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			t.Setenv(h.keyEnv, "")
			srv := httpfake.NewServer(t, httpfake.Reply{File: h.success})
			_, err := h.newSumm(t, srv.URL(), 0).Summarize(context.Background(), testRequest)
			if !errors.Is(err, summarize.ErrMissingCredential) {
				t.Fatalf("err = %v, want summarize.ErrMissingCredential", err)
			}
			if !strings.Contains(err.Error(), h.keyEnv) {
				t.Errorf("error %q does not name %s", err, h.keyEnv)
			}
			if transient, _ := summarize.Classify(err); transient {
				t.Error("missing key classified transient")
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("server got %d requests, want none", n)
			}
		})
	}
}

// TestProviderThroughChain: a 429 with retry-after, then success; the
// chain waits what the server asked and answers with the candidate's name.
func TestProviderThroughChain(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			t.Setenv(h.keyEnv, testKey)
			srv := httpfake.NewServer(t,
				httpfake.Reply{Status: 429, File: h.rateLimit, Headers: map[string]string{"Retry-After": "3"}},
				httpfake.Reply{Status: 529, File: h.overloaded},
				httpfake.Reply{File: h.success},
			)
			var sleeps httpfake.SleepRecorder
			chain := &summarize.Chain{
				Candidates: []summarize.Candidate{{Name: h.name + "-main", Summarizer: h.newSumm(t, srv.URL(), 0)}},
				MaxRetries: 3,
				BaseDelay:  time.Second,
				Sleep:      sleeps.Sleep,
			}
			res, err := chain.Summarize(context.Background(), testRequest)
			if err != nil {
				t.Fatal(err)
			}
			if res.Model != h.name+"-main" || res.FinishReason != summary.FinishStop {
				t.Errorf("result = %+v", res)
			}
			want := []time.Duration{3 * time.Second, 2 * time.Second}
			if got := sleeps.Delays(); !slices.Equal(got, want) {
				t.Errorf("backoff = %v, want %v", got, want)
			}
			if n := len(srv.Requests()); n != 3 {
				t.Errorf("server got %d requests, want 3", n)
			}
		})
	}
}

// TestProviderAbort: cancelling ctx while the server is thinking returns
// the context's error, not a transient one.
func TestProviderAbort(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			t.Setenv(h.keyEnv, testKey)
			srv := httpfake.NewServer(t, httpfake.Reply{Hang: true})
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for len(srv.Requests()) == 0 {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
			_, err := h.newSumm(t, srv.URL(), 0).Summarize(ctx, testRequest)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if transient, _ := summarize.Classify(err); transient {
				t.Error("abort classified transient")
			}
		})
	}
}

func TestProviderConnectionRefused(t *testing.T) {
	srv := httpfake.NewServer(t)
	base := srv.URL()
	srv.Close()
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			t.Setenv(h.keyEnv, testKey)
			_, err := h.newSumm(t, base, 0).Summarize(context.Background(), testRequest)
			if !errors.Is(err, summarize.ErrTransient) {
				t.Fatalf("err = %v, want transient", err)
			}
		})
	}
}

// TestProviderConcurrent: the split-turn path runs two summaries at once
// on one summarizer (docs/behaviour.md §7); run under -race.
func TestProviderConcurrent(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			t.Setenv(h.keyEnv, testKey)
			srv := httpfake.NewServer(t, httpfake.Reply{File: h.success})
			s := h.newSumm(t, srv.URL(), 0)
			errs := make(chan error, 4)
			for range 4 {
				go func() {
					_, err := s.Summarize(context.Background(), testRequest)
					errs <- err
				}()
			}
			for range 4 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestNewProviderRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		new  func() (summary.Summarizer, error)
	}{
		{"openai without model", func() (summary.Summarizer, error) { return NewOpenAI(OpenAIOptions{}) }},
		{"openai bad base URL", func() (summary.Summarizer, error) {
			return NewOpenAI(OpenAIOptions{Model: "m", BaseURL: "localhost:11434"})
		}},
		{"openai bad max tokens field", func() (summary.Summarizer, error) {
			return NewOpenAI(OpenAIOptions{Model: "m", MaxTokensField: "n_predict"})
		}},
		{"anthropic without model", func() (summary.Summarizer, error) { return NewAnthropic(AnthropicOptions{}) }},
		{"anthropic bad base URL", func() (summary.Summarizer, error) {
			return NewAnthropic(AnthropicOptions{Model: "m", BaseURL: "ftp://x"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := tt.new(); err == nil || s != nil {
				t.Fatalf("got (%v, %v), want an error", s, err)
			}
		})
	}
}

// TestErrorAnswersBecomeAPIErrors: each provider's error answer, status,
// headers and body, becomes a *summarize.APIError that classifies as the
// SDK-converted errors always did: the retry-after hints, OpenAI's code
// over its type, a type without a code, a body that is not the API's JSON.
func TestErrorAnswersBecomeAPIErrors(t *testing.T) {
	header := func(k, v string) http.Header {
		h := http.Header{}
		h.Set(k, v)
		return h
	}
	oa := openAIFailure("gpt-4o")
	an := anthropicFailure("claude-sonnet-4-5")
	tests := []struct {
		name          string
		failure       func(int, http.Header, []byte, string) error
		status        int
		header        http.Header
		body          string
		wantTransient bool
		wantAfter     time.Duration
		wantType      string
		wantMessage   string
	}{
		{"openai 429", oa, 429, header("Retry-After", "12"), `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, true, 12 * time.Second, "rate_limit_exceeded", "slow down"},
		{"openai 429 ms", oa, 429, header("retry-after-ms", "250"), ``, true, 250 * time.Millisecond, "", ""},
		{"openai quota", oa, 429, nil, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, false, 0, "insufficient_quota", "You exceeded your current quota"},
		{"openai type without code", oa, 400, nil, `{"error":{"message":"bad","type":"invalid_request_error","code":null}}`, false, 0, "invalid_request_error", "bad"},
		{"openai numeric code", oa, 500, nil, `{"error":{"message":"","code":5}}`, true, 0, "5", `{"error":{"message":"","code":5}}`},
		{"openai 503 from a proxy", oa, 503, nil, "<html>unavailable</html>", true, 0, "", "<html>unavailable</html>"},
		{"openai 404", oa, 404, nil, `{"error":{"message":"no such model","type":"invalid_request_error","code":"model_not_found"}}`, false, 0, "model_not_found", "no such model"},
		{"openai 408", oa, 408, nil, ``, true, 0, "", ""},
		{"anthropic 529", an, 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true, 0, "overloaded_error", "Overloaded"},
		{"anthropic 429", an, 429, header("Retry-After", "2"), `{"type":"error","error":{"type":"rate_limit_error","message":"limit"}}`, true, 2 * time.Second, "rate_limit_error", "limit"},
		{"anthropic 401 echoing the key", an, 401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: ` + testKey + `"}}`, false, 0, "authentication_error", "invalid x-api-key: [redacted]"},
		{"anthropic without a message", an, 500, nil, `{"type":"error"}`, true, 0, "", `{"type":"error"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.failure(tt.status, tt.header, []byte(tt.body), testKey)
			transient, after := summarize.Classify(err)
			if transient != tt.wantTransient || after != tt.wantAfter {
				t.Errorf("Classify = (%v, %v), want (%v, %v)", transient, after, tt.wantTransient, tt.wantAfter)
			}
			if errors.Is(err, summarize.ErrTransient) != tt.wantTransient {
				t.Errorf("errors.Is(ErrTransient) = %v, want %v", !tt.wantTransient, tt.wantTransient)
			}
			var ae *summarize.APIError
			if !errors.As(err, &ae) || ae.StatusCode != tt.status || ae.Type != tt.wantType || ae.RetryAfter != tt.wantAfter || ae.Message != tt.wantMessage {
				t.Fatalf("converted = %#v, want an APIError with status %d, type %q, message %q", err, tt.status, tt.wantType, tt.wantMessage)
			}
		})
	}
}
