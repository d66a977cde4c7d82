// Package llm holds the summarizers that call a hosted or local language
// model through its provider's SDK: an OpenAI-compatible chat-completions
// client (NewOpenAI) and an Anthropic messages client (NewAnthropic).
//
// It is kept apart from core/summary (the Summarizer interface),
// summarize/builtin and summarize (the candidate chain) so that
// those stay light: only what
// imports this package (the host's wiring) links the OpenAI and Anthropic
// SDKs, never a plugin built on sdk. At its boundary every SDK error becomes
// a *summarize.APIError, possibly wrapped in a *summarize.TransientError,
// so summarize.Classify and summarize.Chain need no SDK types.
package llm
