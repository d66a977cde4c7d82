// Package branch owns tree navigation and branch summaries (docs/behaviour.md §11):
// collecting the entries of the branch being left, preparing them for a
// summarizer under a token budget, generating and validating the summary,
// and Navigate, which moves a session's leaf and persists the result.
//
// The package is pure apart from Navigate's single append to the session
// Store. It calls no model directly: summaries go through whatever
// summary.Summarizer the caller passes, and the two hook events
// (session_before_tree, session_tree) are plain function types the engine
// adapts its hook dispatcher to.
//
// # Durable leaf
//
// pi's file format has no leaf pointer: on load the leaf is the last entry
// in file order (docs/behaviour.md §1). A navigation that only moved an in-memory pointer
// would therefore be lost when the file is reopened, by Pith or by pi.
// Navigate keeps "last entry = leaf" true instead: every navigation that
// does not land on the last entry appends one entry whose parent is the new
// position, in the same locked write as everything else it appends:
//
//   - with a summary, the branch_summary entry itself (a child of the new
//     position, as in pi);
//   - with a label, the label entry (pi appends labels as children of the
//     leaf too);
//   - otherwise a marker entry of type custom,
//     {"customType":"pith.leaf","data":{"targetId":…,"fromId":…}}.
//     Custom entries contribute nothing to a context (docs/behaviour.md §2, and pi does
//     the same), so the context built at the marker is exactly the context
//     of the position it hangs from, and pi opening the file continues
//     from there. Navigating to a root user message puts the marker at the
//     root (parentId null), which gives the empty context pi gives for a
//     reset leaf.
//
// The Store's leaf is then the appended entry, so what the running process
// sees and what a reopened file gives are the same entry. New messages hang
// below it; because it yields no message, the conversation is unaffected.
//
// # Where Pith differs from pi 0.73.1
//
//   - fromId of a branch summary is the old leaf (the branch that was
//     summarized), not the new position (docs/behaviour.md §11.5).
//   - With nothing to summarize no entry is written; pi saves the text
//     "No content to summarize".
//   - A generated summary is validated like a compaction summary (empty,
//     cut off by the output cap, or over the cap: an error, nothing saved).
package branch
