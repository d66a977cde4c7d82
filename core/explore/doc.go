// Package explore is the exploring compact worker (compaction strategy
// "explore"): instead of sending the whole transcript of the range being
// compacted to a summarizer in one request, it gives a tool-calling model a
// deterministic overview of the range and six tools to look things up —
// search_session_log, read_session_items, read_file, mark_read_required,
// add_reference and write_summary — and keeps the whole worker
// conversation inside explicit token budgets.
//
// The package owns three things: the overview/index (BuildOverview), which
// never contains a tool output body and falls back to coarser layouts when
// it would pass its deadline; the tools, which read only the range being
// compacted (the retained tail is out of bounds) and the session's
// workspace through core/workspace; and the worker loop (Worker.Run), which
// estimates the conversation before every request, warns the worker once
// when its budget runs low, truncates tool results that would eat into the
// final reserve, sends an over-long summary back once, and dry-runs the new
// initial context before declaring success.
//
// It calls no model of its own and writes nothing: the engine gives it a
// summary.ToolCaller and persists the Result.
package explore
