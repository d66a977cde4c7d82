// Package summary says what a summarizer is, and nothing more: the
// Summarizer interface, the Request it is given (with the structured
// Transcript behind it), the Result it answers, and the rule a result must
// pass before it is saved (Validate); and likewise for a model that holds a
// conversation with tool calls (ToolCaller, used by the explore strategy).
//
// It is a leaf on purpose. The pure core (core/compaction, core/branch)
// asks for summaries through this package alone, so it links no network
// code; the implementations — the built-in summarizer
// (summarize/builtin), the remote endpoint and the retrying chain
// (summarize), the provider SDKs (summarize/llm) — depend on this
// package, not the other way.
package summary
