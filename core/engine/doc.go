// Package engine is the session orchestrator (pi's AgentSession, docs/behaviour.md §9,
// §10, §13): it owns an open session file and the live message list the
// agent sends to its model, keeps a running context-token count, and decides
// when and how to compact.
//
// A Session compacts on three triggers: a manual request (Compact), a turn
// that leaves the context above the threshold (AfterTurn, reason
// "threshold"), and a model error that says the context overflowed
// (AfterTurn or HandleAssistantError, reason "overflow"). Every compaction
// runs the same pipeline: prepare (core/compaction), session_before_compact,
// session.compacting, summarize, validate, append the compaction entry,
// rebuild the live context, session_compact.
//
// Decisions this package makes, where docs/behaviour.md leaves room:
//
//   - compaction.enabled governs automatic compaction only. A manual
//     Compact runs when it is false (pi does the same); an overflow is then
//     reported as an error instead of being compacted (pi #6472).
//   - An overflow message is appended to the session file, so the history
//     shows what happened, but it is not part of the live context: it is
//     left out when appended and whenever the context is rebuilt (an
//     overflow error is recognised by its text; a "silent" overflow — an
//     answer whose usage exceeds the window — is remembered by entry id
//     for the life of the Session).
//   - The guard "the new context must be below the threshold" is checked
//     before the compaction entry is appended, for automatic compactions:
//     a compaction that cannot get the context under the threshold is not
//     saved and fails with ErrStillAboveThreshold, so the turn does not
//     continue into the same overflow again.
//   - After a compaction the usage figures of kept assistant messages
//     describe the old, larger context; the token count uses estimates
//     until the next turn reports fresh usage.
//
// At every turn end (AfterTurn), before the threshold test, old tool
// outputs are pruned by Settings.Pruning through the same lossless archive
// as `pith prune`; the saving is subtracted from the measured usage, so a
// pruning that brings the context under the threshold prevents the
// compaction. The plan only runs when a tool result arrived since the last
// one and the live tool output could reach the minimum saving, so a turn
// without tool output costs nothing extra. A manual Compact emits
// EventAgentAbort before it compacts, for agents in another process; on a
// backend shared between hosts only once it holds the session's lease, so
// a compaction refused because another host holds it stops no agent.
//
// Settings are an immutable snapshot per operation: SetSettings swaps them
// (configuration hot reload) and an operation finishes on the snapshot it
// started with. Operations (appends, turns, compactions) are serialized;
// AbortCompaction and the read accessors may be called from any goroutine.
package engine
