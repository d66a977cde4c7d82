// Package prompts holds the fixed texts Pith sends to a summarizer model:
// the system prompt, the compaction prompts (initial, update, turn prefix,
// short summary), the branch-summary prompt and preamble, and the one-line
// frames that introduce a compaction or branch summary when a context is
// converted for a model (docs/behaviour.md §2.5, §7, §11).
//
// The texts live in .txt files beside this one and are embedded at build
// time, so they can be reviewed as prose. They are Pith's own wording; only
// the section headings are fixed by docs/behaviour.md §7 and §11, because the built-in
// summarizer and users' tooling read them.
package prompts
