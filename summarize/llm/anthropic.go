package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
)

// DefaultAnthropicBaseURL is the official API root.
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// AnthropicOptions configures an Anthropic messages summarizer.
type AnthropicOptions struct {
	// Model is the model id (required).
	Model string
	// BaseURL is the API root (without /v1); default DefaultAnthropicBaseURL.
	BaseURL string
	// APIKeyEnv names the environment variable holding the key; default
	// ANTHROPIC_API_KEY. The key is read at each call and never logged.
	APIKeyEnv string
	// MaxOutputTokens is the model's own output limit. Zero uses the built-in
	// table of known models, and no clamp for a model it does not know.
	MaxOutputTokens int
	// Timeout bounds one HTTP attempt; default DefaultRequestTimeout.
	Timeout time.Duration
	// HTTPClient is the client to send with (its Timeout is replaced by
	// Timeout); nil uses a fresh one.
	HTTPClient *http.Client
}

type anthropicSummarizer struct {
	model  string
	keyEnv string
	limit  int
	client jsonClient
}

// NewAnthropic returns a summarizer speaking the Anthropic messages API,
// without streaming; no attempt is retried here: the Chain classifies
// errors and retries itself.
func NewAnthropic(opts AnthropicOptions) (summary.Summarizer, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("anthropic summarizer: no model configured")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	if err := checkBaseURL(base); err != nil {
		return nil, fmt.Errorf("anthropic summarizer: %w", err)
	}
	keyEnv := opts.APIKeyEnv
	if keyEnv == "" {
		keyEnv = "ANTHROPIC_API_KEY"
	}
	limit := opts.MaxOutputTokens
	if limit <= 0 {
		limit = lookupLimit(anthropicOutputLimits, opts.Model)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	endpointURL, err := endpoint(base, "v1/messages")
	if err != nil {
		return nil, fmt.Errorf("anthropic summarizer: %w", err)
	}
	// Only the variable the options name may supply the key: no
	// ANTHROPIC_BASE_URL, ANTHROPIC_CUSTOM_HEADERS or other ambient variable
	// is consulted.
	return &anthropicSummarizer{
		model:  opts.Model,
		keyEnv: keyEnv,
		limit:  limit,
		client: jsonClient{
			provider: "anthropic summarizer",
			model:    opts.Model,
			url:      endpointURL,
			timeout:  timeout,
			http:     summarize.HTTPClientWithTimeout(opts.HTTPClient, timeout),
			failure:  anthropicFailure(opts.Model),
			// The SDK escaped HTML characters; keep the bytes.
			escapeHTML: true,
		},
	}, nil
}

func (s *anthropicSummarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	key := os.Getenv(s.keyEnv)
	if key == "" {
		return summary.Result{}, fmt.Errorf("anthropic summarizer: environment variable %s is not set: %w", s.keyEnv, summarize.ErrMissingCredential)
	}
	params := messagesRequest{
		Model:    s.model,
		Messages: []anthropicMessage{{Role: "user", Content: []any{textBlock(req.Prompt)}}},
	}
	if req.SystemPrompt != "" {
		params.System = []anthropicText{textBlock(req.SystemPrompt)}
	}
	th := anthropicThinkingFor(s.model, req.Reasoning, clampTokens(req.MaxTokens, s.limit), s.limit)
	params.MaxTokens = int64(th.maxTokens)
	switch {
	case th.adaptive:
		params.Thinking = &anthropicThinkingWire{Type: "adaptive"}
		params.OutputConfig = &anthropicOutputConfig{Effort: th.effort}
	case th.budget > 0:
		params.Thinking = &anthropicThinkingWire{Type: "enabled", BudgetTokens: int64(th.budget)}
	}
	msg, err := s.send(ctx, &params, key)
	if err != nil {
		return summary.Result{}, err
	}
	var text strings.Builder
	sawText := false
	for _, block := range msg.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
			sawText = true
		}
	}
	if !sawText && msg.StopReason == "" {
		return summary.Result{}, fmt.Errorf("anthropic summarizer: %s answered without content or stop_reason: %w", s.model, summarize.ErrBadResponse)
	}
	model := msg.Model
	if model == "" {
		model = s.model
	}
	u := msg.Usage
	return summary.Result{
		Text:         text.String(),
		FinishReason: anthropicFinish(msg.StopReason),
		Usage: summary.Usage{
			Input:      int(u.InputTokens),
			Output:     int(u.OutputTokens),
			CacheRead:  int(u.CacheReadInputTokens),
			CacheWrite: int(u.CacheCreationInputTokens),
		},
		Model: model,
	}, nil
}

// send makes one messages call, for a summary and a tool turn alike.
func (s *anthropicSummarizer) send(ctx context.Context, params *messagesRequest, key string) (*messagesResponse, error) {
	header := http.Header{}
	header.Set("Authorization", "Bearer "+key)
	header.Set("Anthropic-Version", anthropicVersion)
	var msg messagesResponse
	if err := s.client.post(ctx, header, params, &msg, key); err != nil {
		return nil, err
	}
	return &msg, nil
}

// anthropicFinish maps a stop_reason.
func anthropicFinish(reason string) summary.FinishReason {
	switch reason {
	case "end_turn", "stop_sequence":
		return summary.FinishStop
	case "max_tokens":
		return summary.FinishLength
	}
	return summary.FinishOther
}

// anthropicThinking is what a request asks of extended thinking.
type anthropicThinking struct {
	maxTokens int    // max_tokens to send (thinking counts against it)
	budget    int    // budget_tokens for budget-based thinking; 0: none
	adaptive  bool   // adaptive thinking with effort
	effort    string // output_config.effort when adaptive
}

// Thinking budgets per level for budget-based models; the API's minimum
// budget is 1024 tokens.
var anthropicThinkingBudgets = map[string]int{
	"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 16384, "max": 16384,
}

const minThinkingBudget = 1024

// anthropicThinkingModels lists which models take extended thinking and how.
// Models absent here get none: asking a model without thinking for it is a
// 400, leaving it out only costs some quality.
var anthropicThinkingModels = []struct {
	prefix   string
	adaptive bool
}{
	{"claude-3-7-sonnet", false},
	{"claude-haiku-4", false},
	{"claude-sonnet-4", false},
	{"claude-opus-4", false},
	{"claude-sonnet-4-6", true},
	{"claude-opus-4-6", true},
	{"claude-opus-4-7", true},
}

// anthropicThinkingFor decides thinking for level on model. maxTokens is the
// already clamped cap meant for the summary text; budget-based thinking is
// added on top of it (within the model's limit) so the text keeps its room.
func anthropicThinkingFor(model, level string, maxTokens, limit int) anthropicThinking {
	out := anthropicThinking{maxTokens: maxTokens}
	l := normLevel(level)
	if l == "" {
		return out
	}
	if _, known := levelRank[l]; !known {
		return out
	}
	m := baseModel(model)
	found, adaptive, bestLen := false, false, -1
	for _, e := range anthropicThinkingModels {
		if strings.HasPrefix(m, e.prefix) && len(e.prefix) > bestLen {
			found, adaptive, bestLen = true, e.adaptive, len(e.prefix)
		}
	}
	if !found {
		return out
	}
	budget := anthropicThinkingBudgets[l]
	total := maxTokens + budget
	if limit > 0 && total > limit {
		total = limit
	}
	if adaptive {
		// The model sizes its own thinking, which still counts against
		// max_tokens: leave it the same headroom a budget would have.
		out.adaptive = true
		out.effort = nearestLevel(l, []string{"low", "medium", "high"})
		out.maxTokens = total
		return out
	}
	if total <= budget {
		budget = total - minThinkingBudget
	}
	if budget < minThinkingBudget {
		return out
	}
	out.maxTokens, out.budget = total, budget
	return out
}
