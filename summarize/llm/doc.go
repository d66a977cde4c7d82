// Package llm holds the summarizers that call a hosted or local language
// model: an OpenAI-compatible chat-completions client (NewOpenAI) and an
// Anthropic messages client (NewAnthropic), each speaking its wire format
// over net/http with JSON structs for exactly the fields Pith sends and
// reads (no provider SDK: those were over half the CPU of a cold build).
//
// It is kept apart from core/summary (the Summarizer interface),
// summarize/builtin and summarize (the candidate chain) so that those stay
// light: only what imports this package (the host's wiring) links the
// provider clients, never a plugin built on sdk. Every error answer becomes
// a *summarize.APIError, possibly wrapped in a *summarize.TransientError,
// so summarize.Classify and summarize.Chain know no provider's format.
package llm
