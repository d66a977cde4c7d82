// Command branch-notes is an example Pith plugin for session_before_tree.
// When the user leaves a branch and asks for a summary of it, the plugin
// writes one itself from the abandoned entries — no model call, so it is
// instant, free and the same every time: which files were changed and read,
// which commands ran, what the assistant concluded along the way, which
// errors came up, and where the branch stopped. The file lists also go into
// the summary's details ({readFiles, modifiedFiles}), as the built-in
// summarizer does, so later compactions keep tracking them.
//
// When no summary is wanted the plugin has no opinion: navigation goes on
// without one.
//
//	plugins:
//	  - name: branch-notes
//	    path: ./bin/plugins/branch-notes
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pith-dev/pith/sdk"
)

// Limits keep the summary short: it is context for the model, and the most
// recent items matter most.
const (
	maxCommands = 15
	maxTried    = 8
	maxErrors   = 8
	clipChars   = 240
)

func main() {
	sdk.ServePlugin(sdk.ServeOpts{BeforeTree: notes{}}, sdk.WithName("branch-notes"), sdk.WithVersion("1.0.0"))
}

type notes struct{}

// BeforeTree supplies the branch summary when one is wanted.
func (notes) BeforeTree(_ context.Context, ev *sdk.BeforeTreeEvent) (*sdk.BeforeTreeResult, error) {
	if !ev.UserWantsSummary || len(ev.EntriesToSummarize) == 0 {
		return nil, nil
	}
	var b branch
	for _, raw := range ev.EntriesToSummarize {
		b.add(raw)
	}
	if b.messages == 0 && len(b.earlier) == 0 {
		return nil, nil // nothing the model would have seen: let the host decide
	}
	read, modified := b.fileLists()
	details, err := json.Marshal(map[string][]string{"readFiles": read, "modifiedFiles": modified})
	if err != nil {
		return nil, fmt.Errorf("encode details: %w", err)
	}
	sdk.Logger().Debug("branch summarized", "session", ev.SessionID, "entries", len(ev.EntriesToSummarize), "modified", len(modified), "read", len(read))
	return &sdk.BeforeTreeResult{Summary: &sdk.BranchSummary{Summary: b.render(read, modified), Details: details}}, nil
}

// The parts of pi's entries and messages the notes read.
type entry struct {
	Type     string          `json:"type"`
	Message  *message        `json:"message"`
	Summary  string          `json:"summary"`
	Details  json.RawMessage `json:"details"`
	FromHook bool            `json:"fromHook"`
}

type message struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolName     string          `json:"toolName"`
	IsError      bool            `json:"isError"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Command      string          `json:"command"`
	Output       string          `json:"output"`
	ExitCode     *int            `json:"exitCode"`
	Cancelled    bool            `json:"cancelled"`
}

type block struct {
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// blocks decodes content that is either a string or a list of blocks.
func (m *message) blocks() []block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(m.Content, &bs) // unknown shapes carry no notes
	return bs
}

func (m *message) text() string {
	var parts []string
	for _, b := range m.blocks() {
		if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// branch accumulates what the entries show, in order.
type branch struct {
	messages int
	request  string // the first user request
	modified []string
	read     []string
	commands []string
	tried    []string
	errors   []string
	earlier  []string // summaries met inside the branch
	stopped  string
}

func (b *branch) add(raw json.RawMessage) {
	var e entry
	if json.Unmarshal(raw, &e) != nil {
		return
	}
	switch e.Type {
	case "message":
		if e.Message != nil {
			b.messages++
			b.message(e.Message)
		}
	case "branch_summary", "compaction":
		if s := firstLine(e.Summary); s != "" {
			b.earlier = append(b.earlier, s)
		}
		if !e.FromHook { // a hook's details have no agreed shape
			var d struct{ ReadFiles, ModifiedFiles []string }
			if json.Unmarshal(e.Details, &d) == nil {
				b.read = append(b.read, d.ReadFiles...)
				b.modified = append(b.modified, d.ModifiedFiles...)
			}
		}
	case "custom_message":
		b.messages++
	}
}

func (b *branch) message(m *message) {
	switch m.Role {
	case "user":
		t := m.text()
		if b.request == "" {
			b.request = clip(oneLine(t))
		}
		b.stopped = "the user had just written: " + quote(t)
	case "assistant":
		var calls []string
		for _, blk := range m.blocks() {
			if blk.Type != "toolCall" {
				continue
			}
			calls = append(calls, b.toolCall(blk))
		}
		if t := conclusion(m.text()); t != "" {
			b.tried = append(b.tried, t)
		}
		if (m.StopReason == "error" || m.StopReason == "aborted") && m.ErrorMessage != "" {
			b.errors = append(b.errors, "model request "+m.StopReason+": "+clip(oneLine(m.ErrorMessage)))
		}
		switch {
		case len(calls) > 0:
			b.stopped = "the assistant had just called " + strings.Join(calls, ", ")
		case m.StopReason == "aborted":
			b.stopped = "the assistant's answer was aborted"
		default:
			b.stopped = "the assistant had just answered: " + quote(m.text())
		}
	case "toolResult":
		if m.IsError {
			b.errors = append(b.errors, orUnknown(m.ToolName)+" failed: "+clip(oneLine(m.text())))
			b.stopped = "the " + orUnknown(m.ToolName) + " call had just failed"
		} else {
			b.stopped = "the " + orUnknown(m.ToolName) + " call had just returned"
		}
	case "bashExecution":
		if c := oneLine(m.Command); c != "" {
			b.commands = append(b.commands, clip(c))
		}
		if m.ExitCode != nil && *m.ExitCode != 0 && !m.Cancelled {
			b.errors = append(b.errors, fmt.Sprintf("`%s` exited %d: %s", clip(oneLine(m.Command)), *m.ExitCode, clip(lastLine(m.Output))))
		}
		b.stopped = "the user had just run `" + clip(oneLine(m.Command)) + "`"
	}
}

// toolCall records a call's file or command and returns how to name it.
func (b *branch) toolCall(c block) string {
	path, _ := c.Arguments["path"].(string)
	switch strings.ToLower(c.Name) {
	case "write", "edit":
		if path != "" {
			b.modified = append(b.modified, path)
			return c.Name + " " + path
		}
	case "read":
		if path != "" {
			b.read = append(b.read, path)
			return c.Name + " " + path
		}
	case "bash":
		if cmd, _ := c.Arguments["command"].(string); strings.TrimSpace(cmd) != "" {
			b.commands = append(b.commands, clip(oneLine(cmd)))
			return "bash `" + clip(oneLine(cmd)) + "`"
		}
	}
	return orUnknown(c.Name)
}

// fileLists returns the sorted read-only and modified files.
func (b *branch) fileLists() (read, modified []string) {
	mod := map[string]bool{}
	for _, p := range b.modified {
		mod[p] = true
	}
	for _, p := range b.read {
		if !mod[p] {
			read = append(read, p)
		}
	}
	modified = append(modified, b.modified...)
	slices.Sort(read)
	slices.Sort(modified)
	return nonNil(slices.Compact(read)), nonNil(slices.Compact(modified))
}

func (b *branch) render(read, modified []string) string {
	var sb strings.Builder
	sb.WriteString("Notes on the abandoned branch (written by the branch-notes plugin from its entries).\n")
	if b.request != "" {
		fmt.Fprintf(&sb, "\n**First request:** %s\n", b.request)
	}
	section := func(title string, items []string, code bool) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(&sb, "\n**%s:**\n", title)
		for _, it := range items {
			if code {
				it = "`" + it + "`"
			}
			fmt.Fprintf(&sb, "- %s\n", it)
		}
	}
	section("Earlier summaries in this branch", b.earlier, false)
	section("Files changed", modified, false)
	section("Files read", read, false)
	section("Commands run", last(dedupe(b.commands), maxCommands), true)
	section("What was tried", last(b.tried, maxTried), false)
	section("Errors hit", last(dedupe(b.errors), maxErrors), false)
	if b.stopped != "" {
		fmt.Fprintf(&sb, "\n**Where it stopped:** %s\n", b.stopped)
	}
	return strings.TrimRight(sb.String(), "\n")
}

// conclusion is the last paragraph of an assistant's text: where models put
// what they found or decided.
func conclusion(text string) string {
	paras := strings.Split(strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n")), "\n\n")
	for i := len(paras) - 1; i >= 0; i-- {
		if p := strings.Join(strings.Fields(paras[i]), " "); p != "" {
			return clip(p)
		}
	}
	return ""
}

// firstLine is the first line of prose of a summary, skipping Markdown
// headings ("## Goal"), which say nothing about this branch.
func firstLine(s string) string {
	heading := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case strings.HasPrefix(l, "#"):
			if heading == "" {
				heading = strings.TrimSpace(strings.TrimLeft(l, "#"))
			}
		default:
			return clip(oneLine(l))
		}
	}
	return clip(heading)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func quote(s string) string { return "“" + clip(oneLine(s)) + "”" }

func orUnknown(name string) string {
	if name == "" {
		return "a tool"
	}
	return name
}

func clip(s string) string {
	if utf8.RuneCountInString(s) <= clipChars {
		return s
	}
	return strings.TrimRight(string([]rune(s)[:clipChars-1]), " ") + "…"
}

// dedupe keeps the last occurrence of each item, in order of those.
func dedupe(items []string) []string {
	seen := map[string]bool{}
	var out []string
	for i := len(items) - 1; i >= 0; i-- {
		if !seen[items[i]] {
			seen[items[i]] = true
			out = append(out, items[i])
		}
	}
	slices.Reverse(out)
	return out
}

func last(items []string, n int) []string {
	if len(items) > n {
		return items[len(items)-n:]
	}
	return items
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
