// Package summarize holds the network-facing implementations of
// core/summary's Summarizer interface that speak no provider's API: the remote
// endpoint of docs/behaviour.md §7 and the candidate chain with retry and
// backoff used by automatic compaction (docs/behaviour.md §9.5), plus the
// error classification they and the providers share. The built-in
// deterministic summarizer (the default, no network) is summarize/builtin;
// the OpenAI-compatible and Anthropic providers live in summarize/llm,
// the only package that links the provider clients, so the pure core
// packages and plugin binaries stay light.
package summarize
