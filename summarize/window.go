package summarize

import (
	"context"
	"errors"
	"fmt"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
)

// ErrRequestTooLarge means a request's estimated input plus its output cap
// exceeds the summarizer model's context window: an OpenAI-style API
// rejects such a request, so it is not sent.
var ErrRequestTooLarge = errors.New("the request does not fit the summarizer's context window")

// EstimateTokens is the chars/4 estimate of a prompt text (UTF-16 units,
// rounded up), the one the compaction and branch requests are fitted with.
func EstimateTokens(s string) int { return (tokens.Units(s) + 3) / 4 }

// RequestTokens is the estimated input of a request: system prompt plus
// prompt.
func RequestTokens(req summary.Request) int {
	return EstimateTokens(req.SystemPrompt) + EstimateTokens(req.Prompt)
}

// Fits reports whether req's estimated input plus req.MaxTokens fits a
// window of that many tokens (a window ≤ 0 fits everything).
func Fits(req summary.Request, window int) error {
	if window <= 0 {
		return nil
	}
	if in := RequestTokens(req); in+req.MaxTokens > window {
		return fmt.Errorf("%w: ~%d input tokens + %d output tokens > %d (summarizer.contextWindow); shorten the input or lower the output cap",
			ErrRequestTooLarge, in, req.MaxTokens, window)
	}
	return nil
}

// Windowed is the one place the output reserve is enforced for every
// summarizer request — compaction, split-turn prefix, short summary, branch
// summary and a plugin's HostAPI completion: a request whose estimated
// input plus output cap exceeds Window fails with ErrRequestTooLarge
// without reaching the provider. The requests Pith builds itself are
// clipped to fit beforehand; this catches the rest.
type Windowed struct {
	summary.Summarizer
	// Window is the summarizer model's context window in tokens; ≤ 0 turns
	// the check off.
	Window int
	// DefaultMaxTokens is the output cap the provider uses for a request
	// without one (a plugin's completion may leave it 0).
	DefaultMaxTokens int
}

// Summarize sends req to the wrapped summarizer when it fits.
func (w Windowed) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	check := req
	if check.MaxTokens <= 0 {
		check.MaxTokens = w.DefaultMaxTokens
	}
	if err := Fits(check, w.Window); err != nil {
		return summary.Result{}, err
	}
	return w.Summarizer.Summarize(ctx, req)
}

// Converse passes a tool conversation (the explore strategy's worker, which
// keeps to its own budgets) to the wrapped summarizer when it can call
// tools.
func (w Windowed) Converse(ctx context.Context, req summary.ConverseRequest) (summary.ConverseResult, error) {
	tc, err := summary.AsToolCaller(w.Summarizer)
	if err != nil {
		return summary.ConverseResult{}, err
	}
	return tc.Converse(ctx, req)
}

// CallsTools reports whether the wrapped summarizer can call tools.
func (w Windowed) CallsTools() bool {
	_, err := summary.AsToolCaller(w.Summarizer)
	return err == nil
}
