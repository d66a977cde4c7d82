package explore

import (
	"fmt"
	"strings"
)

// systemPrompt tells the worker what it is for and what it may spend;
// without files it is told that the workspace tools are off.
func systemPrompt(b Budgets, files bool) string {
	lookup := "tools to look things up in it (search_session_log, read_session_items) and in the workspace (read_file)"
	choose := fmt.Sprintf("Before writing, choose what the agent should see right after compaction: mark_read_required for the few workspace files it will need in full (their current content, %d tokens in all), add_reference for files worth knowing by path. Check files with read_file first.", b.AutoReadBudget)
	if !files {
		lookup = "tools to look things up in it (search_session_log, read_session_items)"
		choose = "The workspace file tools (read_file, mark_read_required, add_reference) are off for this compaction: no file of the workspace can be read here. Work from the session log alone; name the files that matter in the summary."
	}
	return fmt.Sprintf(`You are the compaction worker of a coding-agent session. Old history of the session is being replaced by your summary, so that the agent can continue the work in a fresh context. You do not get the transcript: you get an overview of the range being compacted and %s. You only summarize: never continue the conversation, never answer the user.

Write the summary in Markdown with these sections: Goal; Constraints & Preferences; Progress (Done / In Progress / Blocked); Key Decisions; Next Steps; Critical Context. Keep exact file paths, function names and error messages; keep a question to the user that is still unanswered verbatim.

Aim at about %d tokens for the summary; it must stay under %d tokens. Store it with write_summary (the last call wins); that ends the compaction.

%s

Your whole conversation, tool results included, has a budget of %d tokens. Read narrow ranges; prefer search_session_log and compact mode; stop exploring in time and write the summary.`,
		lookup, b.SummaryTarget, b.SummaryMax, choose, b.WorkerContextMax)
}

// Instructions are what hooks and the user add to a compaction.
type Instructions struct {
	// Focus is the user's manual instructions ("Additional focus").
	Focus string
	// ContextLines and Prompt come from session.compacting hooks: lines of
	// additional context, and a prompt that replaces the default task.
	ContextLines []string
	Prompt       string
}

// firstMessage is the worker's opening user message.
func firstMessage(ov Overview, in Instructions) string {
	var b strings.Builder
	b.WriteString(ov.Text)
	if len(in.ContextLines) > 0 {
		b.WriteString("\n<additional-context>\n")
		for _, l := range in.ContextLines {
			b.WriteString("- " + l + "\n")
		}
		b.WriteString("</additional-context>\n")
	}
	b.WriteString("\n")
	if in.Prompt != "" {
		b.WriteString(in.Prompt)
	} else {
		b.WriteString("Explore what you need with the tools, choose the files for the new context, then call write_summary with the complete summary.")
	}
	if in.Focus != "" {
		b.WriteString("\n\nAdditional focus: " + in.Focus)
	}
	return b.String()
}

func finishWarning(remaining, max int) string {
	return fmt.Sprintf("Budget warning: about %d of %d tokens are left for this conversation. Stop exploring now: mark or reference the files you have checked, then call write_summary with the complete summary.", remaining, max)
}

func shortenRequest(n int, b Budgets) string {
	return fmt.Sprintf("The summary is ~%d tokens, over the limit of %d. Call write_summary once more with a shorter summary (about %d tokens); a second summary over the limit fails the compaction.", n, b.SummaryMax, b.SummaryTarget)
}

const nudgeSummary = "You answered without calling a tool. Call write_summary with the complete summary now (or a tool if you still need one)."
