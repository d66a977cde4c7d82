package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/workspace"
)

// Sentinel errors of a run; each is wrapped with the figures.
var (
	// ErrWorkerBudget: the conversation reached workerContextMaxTokens
	// before a summary was written.
	ErrWorkerBudget = errors.New("the compact worker ran out of its context budget")
	// ErrMaxTurns: workerMaxTurns requests went by without a summary.
	ErrMaxTurns = errors.New("the compact worker did not write a summary")
	// ErrSummaryTooLong: the summary stayed over summaryMaxTokens after one
	// request to shorten it.
	ErrSummaryTooLong = errors.New("the compact worker's summary is too long")
	// ErrResultTooLarge: the new initial context would not fit
	// resultContextMaxTokens.
	ErrResultTooLarge = errors.New("the compacted context would be too large")
)

// AutoReadCustomType is the customType of the entry that carries the
// auto-read files and references after an exploring compaction.
const AutoReadCustomType = "pith.compaction.autoRead"

// perMessageTokens is the framing a provider adds to each message (role,
// separators), counted so that many small tool results are not free.
const perMessageTokens = 4

// Input is one exploring compaction's material.
type Input struct {
	// Messages is the range being compacted (the messages to summarize and
	// a split turn's prefix, in order); Retained the tail kept verbatim,
	// used only for the result dry run.
	Messages []session.Message
	Retained []session.Message
	Overview OverviewInput
	// Workspace serves read_file, mark_read_required and add_reference; nil
	// turns them off: they are not offered, the system prompt says so, and
	// a call of one anyway is answered that there is no workspace.
	Workspace    *workspace.Workspace
	Instructions Instructions
}

// Progress is reported after every turn of the worker.
type Progress struct {
	Turn, MaxTurns int
	// Tools are the tools called in this turn, in order.
	Tools []string
	// Tokens is the worker conversation's estimate; Max its budget.
	Tokens, Max int
}

// Worker runs exploring compactions with one model.
type Worker struct {
	Model   summary.ToolCaller
	Budgets Budgets
	// Reasoning is passed with each request.
	Reasoning string
	Logger    hclog.Logger
	// Warn receives each warning meant for people (overview over its
	// warning mark, the finish warning); nil drops them (they are still
	// logged and recorded in the Result).
	Warn func(string)
	// Progress, when set, is called after every turn.
	Progress func(Progress)
}

// Result is a finished exploring compaction, ready to persist.
type Result struct {
	Summary string
	// AutoRead is the custom_message with the marked files and the
	// references; nil when there are none.
	AutoRead *workspace.Built
	// Stats go into the compaction entry's details.
	Stats Stats
	Usage summary.Usage
}

// Stats are the figures of a run, stored in the compaction's details and
// reported by the CLI.
type Stats struct {
	Strategy            string         `json:"strategy"`
	Model               string         `json:"model,omitempty"`
	Turns               int            `json:"turns"`
	WorkerTokens        int            `json:"workerTokens"`
	WorkerMaxTokens     int            `json:"workerMaxTokens"`
	OverviewTokens      int            `json:"overviewTokens"`
	OverviewLevel       int            `json:"overviewLevel"`
	SummaryTokens       int            `json:"summaryTokens"`
	AutoReadTokens      int            `json:"autoReadTokens"`
	ResultContextTokens int            `json:"resultContextTokens"`
	ToolCalls           map[string]int `json:"toolCalls"`
	Truncated           int            `json:"truncatedResults,omitempty"`
	Warnings            []string       `json:"warnings,omitempty"`
	AutoReadFiles       []string       `json:"autoReadFiles,omitempty"`
	References          []string       `json:"references,omitempty"`
}

// conversation is the worker's messages and their running estimate.
type conversation struct {
	fixed int // system prompt and tool schemas
	msgs  []summary.ChatMessage
	est   []int
	sum   int
	// measured is the provider's count of the conversation up to the last
	// answer (input + output), and measuredAt how many messages it covers.
	measured, measuredAt int
}

func (c *conversation) add(m summary.ChatMessage) {
	n := perMessageTokens + textTokens(m.Text)
	for _, tc := range m.ToolCalls {
		n += textTokens(tc.Name) + tokens.StringifiedLen(tc.Arguments)/4 + perMessageTokens
	}
	c.msgs = append(c.msgs, m)
	c.est = append(c.est, n)
	c.sum += n
}

// tokens is the conversation's size: the chars/4 estimate, or the
// provider's own count plus the estimate of what came after it, whichever
// is larger, so a tokenizer that counts more than chars/4 cannot push the
// conversation past its hard limit unseen.
func (c *conversation) tokens() int {
	n := c.fixed + c.sum
	if c.measured > 0 {
		m := c.measured
		for _, e := range c.est[c.measuredAt:] {
			m += e
		}
		n = max(n, m)
	}
	return n
}

// Run explores and summarizes in.Messages. On error nothing is to be
// written; the error says which limit was hit, with its figures.
func (w *Worker) Run(ctx context.Context, in Input) (*Result, error) {
	b := w.Budgets
	if err := b.Check(); err != nil {
		return nil, err
	}
	log := w.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	stats := Stats{Strategy: "explore", WorkerMaxTokens: b.WorkerContextMax, ToolCalls: map[string]int{}}
	warn := func(msg string) {
		stats.Warnings = append(stats.Warnings, msg)
		log.Warn(msg)
		if w.Warn != nil {
			w.Warn(msg)
		}
	}

	r := NewRange(in.Messages)
	ov, err := BuildOverview(r, in.Overview, b)
	for _, m := range ov.Warnings {
		warn(m)
	}
	if err != nil {
		return nil, err
	}
	stats.OverviewTokens, stats.OverviewLevel = ov.Tokens, ov.Level

	files := in.Workspace != nil
	tools := toolsFor(files)
	system := systemPrompt(b, files)
	conv := &conversation{fixed: textTokens(system)}
	for _, t := range tools {
		conv.fixed += textTokens(t.Name+t.Description) + len(t.Parameters)/4
	}
	conv.add(summary.ChatMessage{Role: summary.ChatUser, Text: firstMessage(ov, in.Instructions)})

	st := &toolState{r: r, ws: in.Workspace, b: b}
	var usage summary.Usage
	warned, shortenAsked := false, false
	var written string
	for turn := 1; ; turn++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if turn > b.MaxTurns {
			if st.wrote {
				return nil, fmt.Errorf("%w: ~%d tokens after %d turns, limit %d", ErrSummaryTooLong, textTokens(st.summary), b.MaxTurns, b.SummaryMax)
			}
			return nil, fmt.Errorf("%w within workerMaxTurns (%d)", ErrMaxTurns, b.MaxTurns)
		}
		used := conv.tokens()
		remaining := b.WorkerContextMax - used
		if remaining > 0 && remaining <= b.FinishWarningRemaining && !warned {
			warned = true
			warn(fmt.Sprintf("compact worker budget low: ~%d of %d tokens left at turn %d; told the worker to write the summary", remaining, b.WorkerContextMax, turn))
			conv.add(summary.ChatMessage{Role: summary.ChatUser, Text: finishWarning(remaining, b.WorkerContextMax)})
			used = conv.tokens()
			remaining = b.WorkerContextMax - used
		}
		if remaining <= 0 {
			return nil, fmt.Errorf("%w: ~%d tokens before turn %d, workerContextMaxTokens %d (raise it, or lower the overview budgets)", ErrWorkerBudget, used, turn, b.WorkerContextMax)
		}
		res, err := w.Model.Converse(ctx, summary.ConverseRequest{
			SystemPrompt: system,
			Messages:     conv.msgs,
			Tools:        tools,
			MaxTokens:    min(remaining, b.SummaryMax+b.FinalReserve),
			Reasoning:    w.Reasoning,
		})
		if err != nil {
			return nil, fmt.Errorf("compact worker, turn %d: %w", turn, err)
		}
		stats.Turns = turn
		stats.Model = res.Model
		usage = addUsage(usage, res.Usage)
		conv.add(summary.ChatMessage{Role: summary.ChatAssistant, Text: res.Text, ToolCalls: res.ToolCalls})
		if m := res.Usage.Input + res.Usage.CacheRead + res.Usage.CacheWrite + res.Usage.Output; m > 0 {
			conv.measured, conv.measuredAt = m, len(conv.msgs)
		}

		var called []string
		wroteNow := false
		for _, c := range res.ToolCalls {
			called = append(called, c.Name)
			stats.ToolCalls[c.Name]++
			text, isErr := st.run(c)
			if c.Name == ToolSummary && !isErr {
				wroteNow = true
			}
			// Only exploring results are fitted: the short answers of the
			// closing tools are what the final reserve is kept for.
			if exploring(c.Name) {
				var cut bool
				text, cut = fitResult(text, b.WorkerContextMax-conv.tokens()-b.FinalReserve-perMessageTokens)
				if cut {
					stats.Truncated++
				}
			}
			conv.add(summary.ChatMessage{Role: summary.ChatTool, ToolCallID: c.ID, ToolName: c.Name, Text: text, IsError: isErr})
		}
		stats.WorkerTokens = conv.tokens()
		if w.Progress != nil {
			w.Progress(Progress{Turn: turn, MaxTurns: b.MaxTurns, Tools: called, Tokens: stats.WorkerTokens, Max: b.WorkerContextMax})
		}
		log.Debug("compact worker turn", "turn", turn, "tools", called, "tokens", stats.WorkerTokens, "max", b.WorkerContextMax)

		if wroteNow {
			n := textTokens(st.summary)
			if n <= b.SummaryMax {
				written = st.summary
				break
			}
			if shortenAsked {
				return nil, fmt.Errorf("%w: ~%d tokens after a request to shorten it, summaryMaxTokens %d", ErrSummaryTooLong, n, b.SummaryMax)
			}
			shortenAsked = true
			warn(fmt.Sprintf("compact worker summary is ~%d tokens, over summaryMaxTokens %d; asked once to shorten it", n, b.SummaryMax))
			conv.add(summary.ChatMessage{Role: summary.ChatUser, Text: shortenRequest(n, b)})
			continue
		}
		if len(res.ToolCalls) == 0 {
			if st.wrote && textTokens(st.summary) <= b.SummaryMax {
				written = st.summary
				break
			}
			conv.add(summary.ChatMessage{Role: summary.ChatUser, Text: nudgeSummary})
		}
	}
	stats.SummaryTokens = textTokens(written)
	stats.AutoReadFiles = st.marked
	for _, ref := range st.refs {
		stats.References = append(stats.References, ref.Path)
	}

	out := &Result{Summary: written, Usage: usage}
	if in.Workspace != nil && (len(st.marked) > 0 || len(st.refs) > 0) {
		out.AutoRead = in.Workspace.BuildMessage(st.marked, st.refs, workspaceBuild(b))
	}
	if out.AutoRead != nil {
		stats.AutoReadTokens = out.AutoRead.FileTokens
	}
	out.Stats = stats
	return out, nil
}

// DryRun estimates the new initial context — the compaction summary as it
// will be stored, the auto-read message and the retained tail — and fails
// when it passes resultContextMaxTokens.
func DryRun(storedSummary string, autoRead *workspace.Built, retained []session.Message, b Budgets) (int, error) {
	n := tokens.Estimate(session.NewCompactionSummary(storedSummary, 0, "", "").Raw)
	summaryTok := n
	autoTok := 0
	if autoRead != nil {
		autoTok = autoRead.Tokens
		n += autoTok
	}
	retainedTok := 0
	for _, m := range retained {
		retainedTok += tokens.Estimate(m.Raw)
	}
	n += retainedTok
	if n > b.ResultContextMax {
		return n, fmt.Errorf("%w: ~%d tokens (summary %d, auto-read %d, retained tail %d), resultContextMaxTokens %d; mark fewer files or lower compaction.retainedTokens",
			ErrResultTooLarge, n, summaryTok, autoTok, retainedTok, b.ResultContextMax)
	}
	return n, nil
}

// fitResult truncates a tool result to room tokens (never below zero) with
// a hint, so that the final reserve stays free for the summary.
func fitResult(text string, room int) (string, bool) {
	if textTokens(text) <= room {
		return text, false
	}
	const hint = "\n[truncated to protect the budget kept for the summary: narrow the range (from/to, limit, offset) or call write_summary now]"
	keep := max(0, room-textTokens(hint)) * 4
	if keep < 200 {
		return "[refused: this result would eat into the budget kept for the summary. Call write_summary now.]", true
	}
	return clipUnits(text, keep) + hint, true
}

// clipUnits cuts s to at most n UTF-16 units, on a rune boundary.
func clipUnits(s string, n int) string {
	units := 0
	for i, r := range s {
		u := 1
		if r >= 0x10000 {
			u = 2
		}
		if units+u > n {
			return s[:i]
		}
		units += u
	}
	return s
}

func addUsage(a, b summary.Usage) summary.Usage {
	return summary.Usage{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead, CacheWrite: a.CacheWrite + b.CacheWrite}
}

// Details is the compaction entry's details for an exploring compaction:
// the usual file lists (so a later compaction carries them on) and the
// run's figures.
func Details(readFiles, modifiedFiles []string, s Stats) json.RawMessage {
	if readFiles == nil {
		readFiles = []string{}
	}
	if modifiedFiles == nil {
		modifiedFiles = []string{}
	}
	raw, _ := json.Marshal(struct {
		ReadFiles     []string `json:"readFiles"`
		ModifiedFiles []string `json:"modifiedFiles"`
		Stats
	}{readFiles, modifiedFiles, s})
	return raw
}

// workspaceBuild lays out the auto-read message within its budget.
func workspaceBuild(b Budgets) workspace.BuildOptions {
	return workspace.BuildOptions{
		BudgetTokens: b.AutoReadBudget,
		CustomType:   AutoReadCustomType,
		Intro: "Files the compaction chose for this context: the current content of the files needed next " +
			"(read when the compaction ran; paths are relative to the workspace), and references worth knowing.",
	}
}

func exploring(tool string) bool {
	return tool == ToolSearch || tool == ToolReadItems || tool == ToolReadFile
}
