package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
)

// DefaultOpenAIBaseURL is the official API; local servers (Ollama,
// llama.cpp, vLLM) serve the same wire format at http://host:port/v1.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// OpenAIOptions configures an OpenAI-compatible chat-completions summarizer.
type OpenAIOptions struct {
	// Model is the model id sent to the server (required).
	Model string
	// BaseURL is the API root, ending in /v1; default DefaultOpenAIBaseURL.
	BaseURL string
	// APIKeyEnv names the environment variable holding the key; default
	// OPENAI_API_KEY. The key is read at each call and never logged.
	APIKeyEnv string
	// APIKeyOptional lets a call go out without a key when the variable is
	// unset, for local servers that need none. It is implied when BaseURL
	// is set and APIKeyEnv is not: a user who points at their own server
	// without naming a variable should not need a dummy OPENAI_API_KEY,
	// while one who named a variable wants it used.
	APIKeyOptional bool
	// MaxOutputTokens is the model's own output limit. Zero uses the built-in
	// table of known models, and no clamp for a model it does not know.
	MaxOutputTokens int
	// Timeout bounds one HTTP attempt; default DefaultRequestTimeout.
	Timeout time.Duration
	// MaxTokensField names the request field that carries the output cap:
	// "max_completion_tokens" or "max_tokens". Empty chooses: the official
	// API and OpenAI reasoning models (which reject max_tokens) get
	// max_completion_tokens; other servers (Ollama, llama.cpp, vLLM) get
	// max_tokens, the field they all document.
	MaxTokensField string
	// HTTPClient is the client to send with (its Timeout is replaced by
	// Timeout); nil uses a fresh one.
	HTTPClient *http.Client
}

type openAISummarizer struct {
	model    string
	keyEnv   string
	optional bool
	limit    int
	legacy   bool // send max_tokens
	client   jsonClient
}

// NewOpenAI returns a summarizer speaking OpenAI chat completions. The
// system prompt goes as a system message and the prompt as one user
// message; the answer is not streamed and no attempt is retried here: the
// Chain classifies errors and retries itself.
func NewOpenAI(opts OpenAIOptions) (summary.Summarizer, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("openai summarizer: no model configured")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	if err := checkBaseURL(base); err != nil {
		return nil, fmt.Errorf("openai summarizer: %w", err)
	}
	field, err := openAIMaxTokensField(opts.MaxTokensField, base, opts.Model)
	if err != nil {
		return nil, fmt.Errorf("openai summarizer: %w", err)
	}
	keyEnv := opts.APIKeyEnv
	optional := opts.APIKeyOptional
	if keyEnv == "" {
		keyEnv = "OPENAI_API_KEY"
		optional = optional || opts.BaseURL != ""
	}
	limit := opts.MaxOutputTokens
	if limit <= 0 {
		limit = lookupLimit(openAIOutputLimits, opts.Model)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	endpointURL, err := endpoint(base, "chat/completions")
	if err != nil {
		return nil, fmt.Errorf("openai summarizer: %w", err)
	}
	// Only what the options name reaches the server: no OPENAI_BASE_URL,
	// OPENAI_ORG_ID or other ambient variable is consulted.
	return &openAISummarizer{
		model:    opts.Model,
		keyEnv:   keyEnv,
		optional: optional,
		limit:    limit,
		legacy:   field == "max_tokens",
		client: jsonClient{
			provider: "openai summarizer",
			model:    opts.Model,
			url:      endpointURL,
			timeout:  timeout,
			http:     summarize.HTTPClientWithTimeout(opts.HTTPClient, timeout),
			failure:  openAIFailure(opts.Model),
		},
	}, nil
}

func (s *openAISummarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	key, err := s.apiKey()
	if err != nil {
		return summary.Result{}, err
	}
	params := chatRequest{Model: s.model}
	if req.SystemPrompt != "" {
		params.Messages = append(params.Messages, chatText("system", req.SystemPrompt))
	}
	params.Messages = append(params.Messages, chatText("user", req.Prompt))
	resp, err := s.complete(ctx, &params, key, req.MaxTokens, req.Reasoning)
	if err != nil {
		return summary.Result{}, err
	}
	choice := resp.Choices[0]
	u := resp.Usage
	cached := int(u.PromptTokensDetails.CachedTokens)
	model := resp.Model
	if model == "" {
		model = s.model
	}
	return summary.Result{
		Text:         choice.Message.Content,
		FinishReason: openAIFinish(choice.FinishReason),
		Usage: summary.Usage{
			Input:      max(0, int(u.PromptTokens)-cached),
			Output:     int(u.CompletionTokens),
			CacheRead:  cached,
			CacheWrite: int(u.PromptTokensDetails.CacheWriteTokens),
		},
		Model: model,
	}, nil
}

// openAIMaxTokensField resolves OpenAIOptions.MaxTokensField.
func openAIMaxTokensField(configured, baseURL, model string) (string, error) {
	switch configured {
	case "max_tokens", "max_completion_tokens":
		return configured, nil
	case "":
	default:
		return "", fmt.Errorf("max tokens field %q: want max_tokens or max_completion_tokens", configured)
	}
	if u, err := url.Parse(baseURL); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") {
		return "max_completion_tokens", nil
	}
	m := baseModel(model)
	for _, fam := range openAIReasoningFamilies {
		if strings.HasPrefix(m, fam.prefix) {
			return "max_completion_tokens", nil
		}
	}
	return "max_tokens", nil
}

// openAIFinish maps a chat-completions finish_reason.
func openAIFinish(reason string) summary.FinishReason {
	switch reason {
	case "stop":
		return summary.FinishStop
	case "length":
		return summary.FinishLength
	}
	return summary.FinishOther
}

// openAIReasoningFamilies lists the models that accept reasoning_effort and
// the levels each accepts, most specific prefix first. Models absent here
// get no reasoning_effort: sending it to a model that does not take it is a
// 400, while leaving it out only costs some quality.
var openAIReasoningFamilies = []struct {
	prefix string
	levels []string // accepted levels, weakest first
}{
	{"o1-mini", nil},
	{"o1-preview", nil},
	{"o1", []string{"low", "medium", "high"}},
	{"o3", []string{"low", "medium", "high"}},
	{"o4", []string{"low", "medium", "high"}},
	{"gpt-5", []string{"minimal", "low", "medium", "high"}},
}

// openAIReasoningEffort returns the reasoning_effort to send for level on
// model, or "" to send none. A level the model does not have is moved to the
// nearest one it has.
func openAIReasoningEffort(model, level string) string {
	l := normLevel(level)
	if l == "" {
		return ""
	}
	m := baseModel(model)
	// Chat-tuned gpt-5 variants are plain chat models.
	if strings.Contains(m, "-chat") {
		return ""
	}
	for _, fam := range openAIReasoningFamilies {
		if !strings.HasPrefix(m, fam.prefix) {
			continue
		}
		if len(fam.levels) == 0 {
			return ""
		}
		return nearestLevel(l, fam.levels)
	}
	return ""
}

// apiKey reads the key from the environment on every request (a rotated
// key takes effect at once); it may be empty for a server that needs none.
func (s *openAISummarizer) apiKey() (string, error) {
	key := os.Getenv(s.keyEnv)
	if key == "" && !s.optional {
		return "", fmt.Errorf("openai summarizer: environment variable %s is not set: %w", s.keyEnv, summarize.ErrMissingCredential)
	}
	return key, nil
}

// complete sends one chat-completions request, for a plain summary and for
// a turn of a tool conversation alike: the output cap under the model's
// field name, the reasoning effort, the key, and errors as the summarize
// package classifies them. A response always has at least one choice.
func (s *openAISummarizer) complete(ctx context.Context, params *chatRequest, key string, maxTokens int, reasoning string) (*chatResponse, error) {
	limit := int64(clampTokens(maxTokens, s.limit))
	if s.legacy {
		params.MaxTokens = limit
	} else {
		params.MaxCompletionTokens = limit
	}
	params.ReasoningEffort = openAIReasoningEffort(s.model, reasoning)
	header := http.Header{}
	if key != "" {
		header.Set("Authorization", "Bearer "+key)
	}
	var resp chatResponse
	if err := s.client.post(ctx, header, params, &resp, key); err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, fmt.Errorf("openai summarizer: %s answered without choices: %w", s.model, summarize.ErrBadResponse)
	}
	return &resp, nil
}
