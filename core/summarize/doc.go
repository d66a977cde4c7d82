// Package summarize owns the Summarizer interface and its providers: the
// built-in deterministic summarizer (the default, no network), an
// OpenAI-compatible chat-completions client, an Anthropic messages client, the
// remote endpoint of SPEC §7, and the candidate chain with retry and backoff
// used by automatic compaction (SPEC §9.5).
package summarize
