// Package compaction holds the pure algorithms of compaction (docs/behaviour.md §4–§8,
// §10): choosing the cut point, preparing a compaction from a session path,
// assembling the summary requests (the conversation's text comes from
// core/transcript) and validating the answers,
// pruning old tool output with a restorable archive, and the entry that
// persists a compaction.
//
// The package does no I/O of its own except the pruning archive, and calls
// no model directly: Generate talks to whatever summary.Summarizer it is
// given. Orchestration (triggers, hooks, retries, events) belongs to
// core/engine.
//
// Where Pith deliberately differs from the reference (pi 0.73.1) the code
// says so next to the rule; the conformance test asserts each difference.
package compaction
