// Package wiring is the composition root: it turns a configuration into
// the running parts — the summarizer chain, the plugin specs and their
// start sequence, the engine and its settings, the daemon — so that the
// CLI's one-shot commands and `pith serve` are put together by the same
// code. cmd/host keeps the flags, the output and the exit codes; the
// layers below (core, summarize, internal/pluginhost, internal/server)
// are given what they need and never build it themselves.
package wiring
