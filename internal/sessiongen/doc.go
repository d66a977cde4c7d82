// Package sessiongen writes synthetic pi v3 session files (JSONL) for tests,
// conformance runs and benchmarks.
//
// The output is deterministic for a given Options value (seeded
// math/rand/v2), streams line by line so a 100 000-entry session never sits
// in memory, and deliberately exercises the corners of the format that a
// reimplementation of pi tends to get wrong: abandoned branches, earlier
// compactions (some from hooks), split turns, metadata entries before user
// messages, custom messages, branch summaries, bash executions, tool calls
// whose arguments need JavaScript's exact JSON.stringify to be measured
// (unsorted and integer-like keys, numbers such as 1.0 / 1e2, escapes like
// \u00e9 and \/), images, errors, aborted turns and astral-plane text.
//
// The package owns only generation; it knows nothing about parsing or
// estimating and is not imported by production code.
package sessiongen
