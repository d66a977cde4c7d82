package summary

import "context"

// FinishReason says why a model stopped producing output. Only FinishStop is
// acceptable for a summary: FinishLength means the text was cut off by the
// output cap and must not be saved (docs/behaviour.md §7, validation).
type FinishReason string

const (
	FinishStop   FinishReason = "stop"
	FinishLength FinishReason = "length"
	FinishOther  FinishReason = "other"
)

// Usage is what a provider reports for one request.
type Usage struct {
	Input      int
	Output     int
	CacheRead  int
	CacheWrite int
}

// Purpose tells a summarizer which of the summaries of docs/behaviour.md §7/§11 it is
// producing; the built-in summarizer lays out its sections by it.
type Purpose string

const (
	PurposeHistory    Purpose = "history"     // the main compaction summary
	PurposeTurnPrefix Purpose = "turn-prefix" // the early part of a split turn
	PurposeShort      Purpose = "short"       // the 2–3 sentence short summary
	PurposeBranch     Purpose = "branch"      // an abandoned branch (§11)
	PurposeCompletion Purpose = "completion"  // a free completion (plugins via HostAPI)
)

// Request is one summarization call. LLM providers send SystemPrompt and
// Prompt as they are. Source carries the same material in structured form
// for summarizers that do not read prose (the built-in one); it may be nil,
// in which case they work from Prompt.
type Request struct {
	Purpose      Purpose
	SystemPrompt string
	Prompt       string
	// MaxTokens is the output cap; providers clamp it to the model's own limit.
	MaxTokens int
	// Reasoning asks for extended thinking on models that accept it; providers
	// drop it for models that do not.
	Reasoning string
	Source    any
}

// Result is a summarizer's answer.
type Result struct {
	Text         string
	FinishReason FinishReason
	Usage        Usage
	// Model names what produced the text, for logs and events.
	Model string
}

// Summarizer turns a request into text. Implementations must honour ctx
// cancellation promptly: it is the abort mechanism.
type Summarizer interface {
	Summarize(ctx context.Context, req Request) (Result, error)
}

// Func adapts a function to the Summarizer interface.
type Func func(ctx context.Context, req Request) (Result, error)

// Summarize calls f.
func (f Func) Summarize(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }
