package prompts

import (
	_ "embed"
	"strings"
)

// System is the system prompt of every summary request: summarize only,
// never continue the conversation.
var System = trim(systemTxt)

// Initial asks for a first structured summary of a conversation.
var Initial = trim(initialTxt)

// Update asks to merge new messages into the summary given in
// <previous-summary>.
var Update = trim(updateTxt)

// TurnPrefix asks for a summary of the early part of a turn whose later part
// is kept verbatim (a split turn).
var TurnPrefix = trim(turnPrefixTxt)

// Short asks for a 2–3 sentence summary of a finished summary.
var Short = trim(shortTxt)

// Branch asks for a summary of an abandoned branch (docs/behaviour.md §11).
var Branch = trim(branchTxt)

// BranchPreamble is put before a generated branch summary; it ends with a
// blank line so the summary follows directly.
var BranchPreamble = trim(branchPreambleTxt) + "\n\n"

// Omitted is appended to a compaction prompt when older material had to be
// left out of the conversation to fit the summarizer's input window.
var Omitted = trim(omittedTxt)

// CompactionFrame and BranchFrame are the one-line introductions of a
// compaction summary and a branch summary when the context is converted
// for a model; the summary follows in <summary> tags (see SummaryText).
var (
	CompactionFrame = trim(compactionFrameTxt)
	BranchFrame     = trim(branchFrameTxt)
)

// CompactionSummaryText is the user-message text a compaction summary
// becomes in a model's context.
func CompactionSummaryText(summary string) string {
	return CompactionFrame + "\n\n<summary>\n" + summary + "\n</summary>"
}

// BranchSummaryText is the user-message text a branch summary becomes in a
// model's context.
func BranchSummaryText(summary string) string {
	return BranchFrame + "\n\n<summary>\n" + summary + "\n</summary>"
}

var (
	//go:embed system.txt
	systemTxt string
	//go:embed initial.txt
	initialTxt string
	//go:embed update.txt
	updateTxt string
	//go:embed turn_prefix.txt
	turnPrefixTxt string
	//go:embed short.txt
	shortTxt string
	//go:embed branch.txt
	branchTxt string
	//go:embed branch_preamble.txt
	branchPreambleTxt string
	//go:embed omitted.txt
	omittedTxt string
	//go:embed compaction_frame.txt
	compactionFrameTxt string
	//go:embed branch_frame.txt
	branchFrameTxt string
)

// trim drops the trailing newline editors add to text files.
func trim(s string) string { return strings.TrimRight(s, "\r\n") }
