package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

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
	model   string
	keyEnv  string
	limit   int
	timeout time.Duration
	svc     anthropic.MessageService
}

// NewAnthropic returns a summarizer speaking the Anthropic messages API,
// without streaming. The SDK's own retries are off: the Chain classifies
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
	// WithoutEnvironmentDefaults keeps the SDK from picking up credentials,
	// profiles or a base URL from the environment on its own: only the
	// variable the options name may supply the key.
	client := anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithHTTPClient(summarize.HTTPClientWithTimeout(opts.HTTPClient, timeout)),
		option.WithMaxRetries(0),
		// An explicit request timeout also stops the SDK from refusing large
		// max_tokens without streaming (it guesses the answer may take over
		// ten minutes); our own timeout bounds the wait instead.
		option.WithRequestTimeout(timeout),
	)
	return &anthropicSummarizer{model: opts.Model, keyEnv: keyEnv, limit: limit, timeout: timeout, svc: client.Messages}, nil
}

func (s *anthropicSummarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	key := os.Getenv(s.keyEnv)
	if key == "" {
		return summary.Result{}, fmt.Errorf("anthropic summarizer: environment variable %s is not set: %w", s.keyEnv, summarize.ErrMissingCredential)
	}
	params := anthropic.MessageNewParams{
		Model:    anthropic.Model(s.model),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(req.Prompt))},
	}
	if req.SystemPrompt != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.SystemPrompt}}
	}
	th := anthropicThinkingFor(s.model, req.Reasoning, clampTokens(req.MaxTokens, s.limit), s.limit)
	params.MaxTokens = int64(th.maxTokens)
	switch {
	case th.adaptive:
		params.Thinking = anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
		params.OutputConfig = anthropic.OutputConfigParam{Effort: anthropic.OutputConfigEffort(th.effort)}
	case th.budget > 0:
		params.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(th.budget))
	}
	msg, err := s.svc.New(ctx, params, option.WithAPIKey(key))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return summary.Result{}, ctxErr
		}
		return summary.Result{}, s.convertError(err, key)
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
	model := string(msg.Model)
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

// convertError turns an SDK error into a one-line error free of the key:
// an HTTP error becomes a *summarize.APIError, marked transient when worth
// retrying, so that no *anthropic.Error leaves this package. The SDK's own
// Error() carries the whole body and URL, too much for one line.
func (s *anthropicSummarizer) convertError(err error, key string) error {
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		msg := ae.Message
		if msg == "" {
			msg = ae.RawJSON()
		}
		return apiError("anthropic summarizer", s.model, ae.StatusCode, string(ae.Type()), msg, ae.Response, key)
	}
	return transportError("anthropic summarizer: "+s.model, s.timeout, err, key)
}

// anthropicFinish maps a stop_reason.
func anthropicFinish(reason anthropic.StopReason) summary.FinishReason {
	switch reason {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		return summary.FinishStop
	case anthropic.StopReasonMaxTokens:
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
