package summary

import "github.com/pith-dev/pith/core/session"

// Transcript is the structured material behind a summary request, carried
// in Request.Source. LLM providers ignore it (they send the prompt text);
// the built-in summarizer works from it directly instead of parsing prose.
type Transcript struct {
	// Messages are the messages to summarize, oldest first.
	Messages []session.Message
	// PreviousSummary is the summary being updated, "" for a first one.
	PreviousSummary string
	// ContextLines come from plugins (session.compacting) and must be kept.
	ContextLines []string
	// Instructions are the user's focus instructions for a manual compaction.
	Instructions string
	// ReadFiles and ModifiedFiles are the file operations of §5.8 / §11.3.
	ReadFiles     []string
	ModifiedFiles []string
}
