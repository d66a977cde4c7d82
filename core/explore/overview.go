package explore

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
)

// ErrOverviewTooLarge: even the coarsest overview passes the deadline.
var ErrOverviewTooLarge = errors.New("the session overview does not fit overviewDeadlineTokens")

// OverviewInput is what the overview describes besides the range.
type OverviewInput struct {
	PreviousSummary string
	ReadFiles       []string
	ModifiedFiles   []string
}

// Overview is the worker's first view of the range.
type Overview struct {
	Text   string
	Tokens int
	// Level is the layout used: 0 detailed, 1 coarser, 2 counts only.
	Level int
	// Warnings say what went over its mark (the warning threshold, a
	// fallback); empty when the overview came out as aimed.
	Warnings []string
}

// layout is one level of detail of the overview.
type layout struct {
	msgClip     int // runes of each listed message
	pinnedClip  int // runes of the first and the last user message
	summaryClip int // runes of the previous summary
	maxMessages int
	maxCalls    int
	maxFiles    int
	callWidth   int
}

var layouts = []layout{
	{msgClip: 600, pinnedClip: 3000, summaryClip: 6000, maxMessages: 400, maxCalls: 300, maxFiles: 60, callWidth: 100},
	{msgClip: 160, pinnedClip: 800, summaryClip: 1500, maxMessages: 60, maxCalls: 40, maxFiles: 15, callWidth: 60},
	{msgClip: 0, pinnedClip: 200, summaryClip: 300, maxMessages: 0, maxCalls: 0, maxFiles: 0, callWidth: 0},
}

// BuildOverview lays out the range for the worker: counts, the pinned first
// and last user messages, the user/assistant/system messages newest first,
// each clipped, and the tool calls newest first as an index — item number,
// entry id, tool, a one-line summary, paths, success and output size.
// Tool output bodies are never included. It fills up to OverviewTarget;
// above OverviewWarning it adds a warning and goes on; above
// OverviewDeadline it falls back to a coarser layout, and fails only when
// even the counts-only layout does not fit.
func BuildOverview(r *Range, in OverviewInput, b Budgets) (Overview, error) {
	var warnings []string
	for level, l := range layouts {
		text := renderOverview(r, in, l, b.OverviewTarget)
		n := textTokens(text)
		if n > b.OverviewDeadline {
			warnings = append(warnings, fmt.Sprintf("overview level %d is ~%d tokens, over overviewDeadlineTokens %d; falling back to a coarser overview", level, n, b.OverviewDeadline))
			continue
		}
		if n > b.OverviewWarning {
			warnings = append(warnings, fmt.Sprintf("overview is ~%d tokens, over overviewWarningTokens %d (target %d); continuing", n, b.OverviewWarning, b.OverviewTarget))
		}
		return Overview{Text: text, Tokens: n, Level: level, Warnings: warnings}, nil
	}
	return Overview{Warnings: warnings}, fmt.Errorf("%w (%d tokens): even the counts-only overview of %d items is larger", ErrOverviewTooLarge, b.OverviewDeadline, r.Len())
}

func renderOverview(r *Range, in OverviewInput, l layout, target int) string {
	var b strings.Builder
	n := r.Len()
	fmt.Fprintf(&b, "# Overview of the range being compacted: items #1–#%d", n)
	if n > 0 {
		fmt.Fprintf(&b, " (entries %s … %s)", r.msgs[0].EntryID, r.msgs[n-1].EntryID)
	}
	b.WriteString("\nThe retained tail (the newest messages, kept verbatim after compaction) is not part of this range; the tools cannot read it.\n\n")
	writeCounts(&b, r)

	if in.PreviousSummary != "" {
		fmt.Fprintf(&b, "\n## Previous summary (merge it into yours)\n%s\n", clip(in.PreviousSummary, l.summaryClip))
	}
	writeFiles(&b, "Files read", in.ReadFiles, l.maxFiles)
	writeFiles(&b, "Files modified", in.ModifiedFiles, l.maxFiles)

	first, last := 0, 0
	for i := 1; i <= n; i++ {
		if r.Role(i) == session.RoleUser {
			if first == 0 {
				first = i
			}
			last = i
		}
	}
	if first > 0 {
		fmt.Fprintf(&b, "\n## First user message (#%d)\n%s\n", first, clip(r.Item(first).Text, l.pinnedClip))
	}
	if last > first {
		fmt.Fprintf(&b, "\n## Last user message (#%d)\n%s\n", last, clip(r.Item(last).Text, l.pinnedClip))
	}

	used := textTokens(b.String())
	// Messages get the larger share of what is left; the call index what
	// the messages leave over.
	msgBudget := (target - used) * 2 / 3
	if l.maxMessages > 0 && msgBudget > 0 {
		var sec strings.Builder
		listed, older, secTokens, full := 0, 0, 0, false
		for i := n; i >= 1; i-- {
			if !isConversation(r.Role(i)) || i == first || i == last {
				continue
			}
			if full {
				older++ // counted by role alone: nothing older is decoded
				continue
			}
			it := r.Item(i)
			line := messageLine(it, l.msgClip)
			if line == "" {
				continue
			}
			lt := textTokens(line)
			if listed >= l.maxMessages || secTokens+lt > msgBudget {
				full = true
				older++
				continue
			}
			secTokens += lt
			sec.WriteString(line)
			listed++
		}
		if listed > 0 || older > 0 {
			b.WriteString("\n## Messages, newest first\n")
			b.WriteString(sec.String())
			if older > 0 {
				fmt.Fprintf(&b, "(%d more messages not listed: search_session_log / read_session_items)\n", older)
			}
		}
	}

	used = textTokens(b.String())
	callBudget := target - used
	if l.maxCalls > 0 && callBudget > 0 {
		var sec strings.Builder
		listed, older, secTokens, full := 0, 0, 0, false
		add := func(line string) bool {
			lt := textTokens(line)
			if listed >= l.maxCalls || secTokens+lt > callBudget {
				full = true
				return false
			}
			secTokens += lt
			sec.WriteString(line)
			listed++
			return true
		}
		for i := n; i >= 1; i-- {
			role := r.Role(i)
			if full {
				// Older calls are counted by their results, by role alone.
				if role == session.RoleToolResult || role == session.RoleBashExecution {
					older++
				}
				continue
			}
			switch role {
			case session.RoleBashExecution:
				it := r.Item(i)
				if !add(fmt.Sprintf("#%d %s bash %s out~%dtok — %s\n", i, it.EntryID, status(it.IsError), textTokens(it.Output), clip(oneLine(it.Text), l.callWidth))) {
					older++
				}
			case session.RoleAssistant:
				if !bytes.Contains(r.msgs[i-1].Raw, []byte(`"toolCall"`)) {
					continue
				}
				it := r.Item(i)
				for k := len(it.Calls) - 1; k >= 0; k-- {
					if full || !add(r.callLine(it, it.Calls[k], l.callWidth)) {
						older++
					}
				}
			}
		}
		if listed > 0 || older > 0 {
			b.WriteString("\n## Tool calls, newest first (index only: read_session_items with mode \"full\" shows outputs)\n")
			b.WriteString(sec.String())
			if older > 0 {
				fmt.Fprintf(&b, "(%d older tool calls not listed)\n", older)
			}
		}
	}
	return b.String()
}

// messageLine is one message of the overview list.
func messageLine(it *Item, width int) string {
	text := oneLine(it.Text)
	if text == "" {
		if len(it.Calls) == 0 {
			return ""
		}
		names := make([]string, len(it.Calls))
		for i, c := range it.Calls {
			names[i] = c.Name
		}
		text = "(tool calls: " + strings.Join(names, ", ") + ")"
	}
	return fmt.Sprintf("#%d [%s] %s\n", it.N, roleLabel(it.Role), clip(text, width))
}

// callLine is one tool call of the index: never its output, only its size.
func (r *Range) callLine(it *Item, c Call, width int) string {
	res, ok := r.result(it.N, c.ID)
	state, size := "no result", ""
	if ok {
		raw := r.msgs[res-1].Raw
		_, isErr := resultEnvelope(raw)
		state = status(isErr)
		size = fmt.Sprintf(" out~%dtok at #%d", tokens.Estimate(raw), res)
	}
	line := fmt.Sprintf("#%d %s %s %s%s", it.N, it.EntryID, c.Name, state, size)
	p := callPaths(c.Args)
	if len(p) > 0 {
		line += " paths: " + strings.Join(p, ", ")
	}
	// A call on files is described by its paths: its other arguments are
	// file content (write, edit), which the index leaves out like outputs.
	if len(p) == 0 || gjson.GetBytes(c.Args, "command").Exists() {
		if s := callSummary(c, width); s != "" {
			line += " — " + s
		}
	}
	return line + "\n"
}

func status(isError bool) string {
	if isError {
		return "FAILED"
	}
	return "ok"
}

func writeCounts(b *strings.Builder, r *Range) {
	byRole := map[string]int{}
	byTool := map[string]int{}
	failed := 0
	for i := 1; i <= r.Len(); i++ {
		role := r.Role(i)
		byRole[roleLabel(role)]++
		switch role {
		case session.RoleToolResult:
			name, isErr := resultEnvelope(r.msgs[i-1].Raw)
			byTool[name]++
			if isErr {
				failed++
			}
		case session.RoleBashExecution:
			byTool["bash (user)"]++
		}
	}
	roles := make([]string, 0, len(byRole))
	for k, v := range byRole {
		roles = append(roles, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(roles)
	fmt.Fprintf(b, "Counts: %d items — %s; %d tool results failed.\n", r.Len(), strings.Join(roles, ", "), failed)
	if len(byTool) > 0 {
		tools := make([]string, 0, len(byTool))
		for k := range byTool {
			tools = append(tools, k)
		}
		sort.Slice(tools, func(i, j int) bool {
			if byTool[tools[i]] != byTool[tools[j]] {
				return byTool[tools[i]] > byTool[tools[j]]
			}
			return tools[i] < tools[j]
		})
		parts := make([]string, len(tools))
		for i, k := range tools {
			parts[i] = fmt.Sprintf("%s %d", k, byTool[k])
		}
		fmt.Fprintf(b, "Tool results by tool: %s.\n", strings.Join(parts, ", "))
	}
}

func writeFiles(b *strings.Builder, title string, files []string, max int) {
	if len(files) == 0 || max == 0 {
		if len(files) > 0 {
			fmt.Fprintf(b, "%s: %d\n", title, len(files))
		}
		return
	}
	shown := files
	if len(shown) > max {
		shown = shown[:max]
	}
	fmt.Fprintf(b, "\n## %s (%d)\n%s\n", title, len(files), strings.Join(shown, "\n"))
	if len(files) > max {
		fmt.Fprintf(b, "(%d more)\n", len(files)-max)
	}
}

// resultEnvelope reads a tool result's toolName (an early field: gjson
// stops there) and isError. isError follows the often large content, so it
// is found by a plain byte search rather than a JSON walk: the unescaped
// text "isError":true cannot occur inside a JSON string, only as a member
// (of the message, or — rarely — of its details).
// pi writes isError just before the timestamp at the end, so the last few
// hundred bytes decide almost always without reading the body.
func resultEnvelope(raw []byte) (toolName string, isError bool) {
	toolName = gjson.GetBytes(raw, "toolName").String()
	tail := raw[max(0, len(raw)-256):]
	if k := bytes.LastIndex(tail, isErrorKey); k >= 0 {
		return toolName, bytes.HasPrefix(tail[k+len(isErrorKey):], []byte("true"))
	}
	return toolName, bytes.Contains(raw, []byte(`"isError":true`))
}

var isErrorKey = []byte(`"isError":`)
