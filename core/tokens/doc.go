// Package tokens owns token accounting (docs/behaviour.md §3): the chars/4 estimate of a
// message measured in UTF-16 code units exactly as the reference counts
// them, the context-token total from the last valid usage plus trailing
// estimates, and the compaction threshold test.
//
// Estimates are computed straight from a message's raw JSON: strings are
// measured without being decoded, and tool-call arguments are measured as
// JavaScript's JSON.stringify would print them, without building them.
package tokens
