package explore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
)

// Range is the part of a session being compacted, as numbered items: item
// #N is the N-th message (1-based). Messages are decoded lazily and cached,
// so an overview of a huge range decodes only what it shows. A Range is
// safe for concurrent use.
type Range struct {
	msgs  []session.Message
	mu    sync.Mutex
	items []*Item
}

// NewRange numbers msgs (the messages to summarize, then the split turn's
// prefix, in order).
func NewRange(msgs []session.Message) *Range {
	return &Range{msgs: msgs, items: make([]*Item, len(msgs))}
}

// Len is the number of items.
func (r *Range) Len() int { return len(r.msgs) }

// Role is item n's role without decoding it.
func (r *Range) Role(n int) string { return r.msgs[n-1].Role }

// Item is one decoded message of the range.
type Item struct {
	N       int
	EntryID string
	Role    string
	// Text is what the message says: user and assistant text, a custom
	// message's content, a summary's text, a bash command.
	Text     string
	Thinking string
	// Calls are an assistant message's tool calls.
	Calls []Call
	// ToolName, ToolCallID and IsError describe a tool result (IsError also
	// marks a failed bash command); Output is its body.
	ToolName   string
	ToolCallID string
	IsError    bool
	Output     string
	// Tokens is the message's estimate (chars/4).
	Tokens int
}

// Call is one tool call of an assistant message.
type Call struct {
	ID   string
	Name string
	Args json.RawMessage
}

// Item returns item n (1-based), decoding it on first use.
func (r *Range) Item(n int) *Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	if it := r.items[n-1]; it != nil {
		return it
	}
	it := decodeItem(n, r.msgs[n-1])
	r.items[n-1] = it
	return it
}

func decodeItem(n int, m session.Message) *Item {
	it := &Item{N: n, EntryID: m.EntryID, Role: m.Role, Tokens: tokens.Estimate(m.Raw)}
	am, err := m.Decode()
	if err != nil {
		it.Text = "(undecodable message)"
		return it
	}
	var text, output []string
	for _, b := range am.ContentBlocks() {
		switch b.Type {
		case "text":
			if m.Role == session.RoleToolResult {
				output = append(output, b.Text)
			} else {
				text = append(text, b.Text)
			}
		case "thinking":
			it.Thinking += b.Thinking
		case "toolCall":
			it.Calls = append(it.Calls, Call{ID: b.ID, Name: b.Name, Args: b.Arguments})
		case "image":
			if m.Role == session.RoleToolResult {
				output = append(output, "[image]")
			} else {
				text = append(text, "[image]")
			}
		}
	}
	it.Text = strings.Join(text, "\n")
	it.Output = strings.Join(output, "\n")
	switch m.Role {
	case session.RoleToolResult:
		it.ToolName, it.ToolCallID, it.IsError = am.ToolName, am.ToolCallID, am.IsError
	case session.RoleBashExecution:
		it.Text = "$ " + am.Command
		it.Output = am.Output
		it.IsError = am.Cancelled || (am.ExitCode != nil && *am.ExitCode != 0)
		it.ToolName = "bash"
	case session.RoleCompactionSummary, session.RoleBranchSummary:
		it.Text = am.Summary
	case session.RoleCustom:
		if am.CustomType != "" {
			it.Text = "(" + am.CustomType + ") " + it.Text
		}
	}
	return it
}

// result finds the tool result answering call id of the assistant item n:
// results follow their call, before the next assistant message. It reads
// only the envelope of each candidate, not its body.
func (r *Range) result(n int, id string) (res int, ok bool) {
	for i := n + 1; i <= r.Len(); i++ {
		switch r.msgs[i-1].Role {
		case session.RoleAssistant:
			return 0, false
		case session.RoleToolResult:
			if gjson.GetBytes(r.msgs[i-1].Raw, "toolCallId").String() == id {
				return i, true
			}
		}
	}
	return 0, false
}

// isConversation reports the roles the overview lists as messages: what
// people and the model said, and the system-side notes (custom messages,
// summaries).
func isConversation(role string) bool {
	switch role {
	case session.RoleUser, session.RoleAssistant, session.RoleCustom, session.RoleCompactionSummary, session.RoleBranchSummary:
		return true
	}
	return false
}

// roleLabel is how an item's role is shown: summaries and custom messages
// are the "system" side of a pi session.
func roleLabel(role string) string {
	switch role {
	case session.RoleCustom, session.RoleCompactionSummary, session.RoleBranchSummary:
		return "system"
	case session.RoleBashExecution:
		return "bash"
	}
	return role
}

// callPaths are the file paths a tool call names.
func callPaths(args json.RawMessage) []string {
	var out []string
	g := gjson.ParseBytes(args)
	for _, k := range []string{"path", "file_path", "filePath", "file"} {
		if v := g.Get(k); v.Type == gjson.String && v.Str != "" {
			out = append(out, v.Str)
		}
	}
	g.Get("paths").ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.String {
			out = append(out, v.Str)
		}
		return len(out) < 8
	})
	return out
}

// callSummary is a one-line description of a call: a bash command, or the
// compact arguments.
func callSummary(c Call, width int) string {
	g := gjson.ParseBytes(c.Args)
	if cmd := g.Get("command"); cmd.Type == gjson.String {
		return clip(oneLine(cmd.Str), width)
	}
	if len(c.Args) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Compact(&buf, c.Args) != nil {
		return clip(oneLine(string(c.Args)), width)
	}
	return clip(oneLine(buf.String()), width)
}

// clip shortens s to at most n runes, saying how much was left out.
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			return s[:i] + fmt.Sprintf(" […%d more chars]", utf8.RuneCountInString(s[i:]))
		}
		count++
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// textTokens is the chars/4 estimate of a text, in UTF-16 units (docs/behaviour.md §3).
func textTokens(s string) int { return (tokens.Units(s) + 3) / 4 }
