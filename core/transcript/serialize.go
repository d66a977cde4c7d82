package transcript

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/tidwall/gjson"
)

// MaxPartChars is where a long part of a serialized message is clipped, in
// UTF-16 units (docs/behaviour.md §6).
const MaxPartChars = 2000

// ErrInputTooLarge is returned when a summarizer request cannot be made to
// fit the summarizer's input window. Such a request is never sent.
var ErrInputTooLarge = errors.New("summarizer input does not fit the model's window")

// SerializeConversation renders messages as the plain-text transcript a
// summarizer reads (docs/behaviour.md §6): one block per part, blocks separated by a
// blank line. Messages are first converted as for a model (bash runs,
// custom messages and summaries become user text); tool results, thinking,
// custom and bash text longer than MaxPartChars are clipped with a note of
// how much was cut. The reference clips only tool results (pi #8196).
func SerializeConversation(msgs []session.Message) string {
	// Joining the finished pieces sizes the result once; growing one
	// builder copied a long transcript over and over.
	pieces := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if s := serializeMessage(m); s != "" {
			pieces = append(pieces, s)
		}
	}
	return strings.Join(pieces, "\n\n")
}

// serializeMessage renders one message's blocks, "" when it has none.
func serializeMessage(m session.Message) string {
	r := gjson.ParseBytes(m.Raw)
	switch m.Role {
	case session.RoleUser:
		return prefixed("[User]: ", ContentText(r.Get("content"), ""))
	case session.RoleCustom:
		return prefixed("[User]: ", clip(ContentText(r.Get("content"), "")))
	case session.RoleBashExecution:
		if truthy(r.Get("excludeFromContext")) {
			return ""
		}
		return prefixed("[User]: ", bashText(r, clip))
	case session.RoleCompactionSummary:
		return prefixed("[User]: ", prompts.CompactionSummaryText(r.Get("summary").String()))
	case session.RoleBranchSummary:
		return prefixed("[User]: ", prompts.BranchSummaryText(r.Get("summary").String()))
	case session.RoleToolResult:
		return prefixed("[Tool result]: ", clip(ContentText(r.Get("content"), "")))
	case session.RoleAssistant:
		return assistantText(r)
	}
	return ""
}

func prefixed(label, text string) string {
	if text == "" {
		return ""
	}
	return label + text
}

// ContentText is a message content's text: a string content as is, else
// the non-empty text blocks joined with sep (images and other blocks carry
// no text). Serialization, the editor text of a branch navigation and the
// built-in summarizer all read a content through it.
func ContentText(c gjson.Result, sep string) string {
	if c.Type == gjson.String {
		return c.Str
	}
	var b strings.Builder
	c.ForEach(func(_, blk gjson.Result) bool {
		if blk.Get("type").Str != "text" {
			return true
		}
		if t := blk.Get("text").String(); t != "" {
			if b.Len() > 0 {
				b.WriteString(sep)
			}
			b.WriteString(t)
		}
		return true
	})
	return b.String()
}

// clip shortens s to MaxPartChars UTF-16 units and says how many were cut.
func clip(s string) string {
	if len(s) <= MaxPartChars { // bytes >= units: short strings need no count
		return s
	}
	n := tokens.Units(s)
	if n <= MaxPartChars {
		return s
	}
	return clipUnits(s, MaxPartChars) + "\n\n[... " + strconv.Itoa(n-MaxPartChars) + " more characters truncated]"
}

// truthy is JavaScript truthiness of a JSON value.
func truthy(r gjson.Result) bool {
	switch r.Type {
	case gjson.True:
		return true
	case gjson.Number:
		return r.Num != 0
	case gjson.String:
		return r.Str != ""
	case gjson.JSON:
		return true
	}
	return false
}

// bashText is the user text a bash run becomes for a model: the command,
// the output in a fence (through clipOutput), and how it ended.
func bashText(r gjson.Result, clipOutput func(string) string) string {
	var b strings.Builder
	b.WriteString("Ran `")
	b.WriteString(r.Get("command").String())
	b.WriteString("`\n")
	if out := r.Get("output").String(); out != "" {
		b.WriteString("```\n")
		b.WriteString(clipOutput(out))
		b.WriteString("\n```")
	} else {
		b.WriteString("(no output)")
	}
	if truthy(r.Get("cancelled")) {
		b.WriteString("\n\n(command cancelled)")
	} else if ec := r.Get("exitCode"); ec.Type == gjson.Number && ec.Num != 0 {
		b.WriteString("\n\nCommand exited with code ")
		b.WriteString(jsNumber(ec.Num))
	}
	if p := r.Get("fullOutputPath"); truthy(r.Get("truncated")) && truthy(p) {
		b.WriteString("\n\n[Output truncated. Full output: ")
		b.WriteString(p.String())
		b.WriteString("]")
	}
	return b.String()
}

// assistantText renders thinking, text and tool calls, in that order.
func assistantText(r gjson.Result) string {
	var thinking, text, calls []string
	r.Get("content").ForEach(func(_, blk gjson.Result) bool {
		switch blk.Get("type").Str {
		case "text":
			text = append(text, blk.Get("text").String())
		case "thinking":
			thinking = append(thinking, blk.Get("thinking").String())
		case "toolCall":
			calls = append(calls, toolCallText(blk))
		}
		return true
	})
	var parts []string
	if len(thinking) > 0 {
		parts = append(parts, "[Assistant thinking]: "+clip(strings.Join(thinking, "\n")))
	}
	if len(text) > 0 {
		parts = append(parts, "[Assistant]: "+strings.Join(text, "\n"))
	}
	if len(calls) > 0 {
		parts = append(parts, "[Assistant tool calls]: "+strings.Join(calls, "; "))
	}
	return strings.Join(parts, "\n\n")
}

// toolCallText renders name(key=<json>, …) with the arguments enumerated
// in JavaScript property order and each value as JSON.stringify writes it.
func toolCallText(blk gjson.Result) string {
	var b strings.Builder
	b.WriteString(blk.Get("name").String())
	b.WriteByte('(')
	args := blk.Get("arguments")
	if v, ok := parseJS(args.Raw); ok {
		switch v.kind {
		case 'o':
			for i, k := range v.keys {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(k.text)
				b.WriteByte('=')
				v.vals[i].stringify(&b)
			}
		case 'a':
			for i, e := range v.vals {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Itoa(i))
				b.WriteByte('=')
				e.stringify(&b)
			}
		case 's':
			// A string enumerates its characters (UTF-16 units).
			for i, u := range v.str {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Itoa(i))
				b.WriteByte('=')
				writeJSString(&b, []uint16{u})
			}
		}
	}
	b.WriteByte(')')
	return b.String()
}

// Fitted is a serialized conversation made to fit an input budget.
type Fitted struct {
	Text string
	// Tokens is the estimate of Text.
	Tokens int
	// OmittedMessages and OmittedTokens describe the middle part left out;
	// both are 0 when everything fitted.
	OmittedMessages int
	OmittedTokens   int
}

// FitConversation serializes msgs and, when the text would exceed
// budgetTokens (<= 0: no limit), leaves out the oldest middle messages:
// the first user request and the most recent messages stay, and a marker
// block says how much is missing. When even the first request, the marker
// and the last message do not fit it returns ErrInputTooLarge.
func FitConversation(msgs []session.Message, budgetTokens int) (Fitted, error) {
	pieces := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if s := serializeMessage(m); s != "" {
			pieces = append(pieces, s)
		}
	}
	// sizes[i] = UTF-16 length of pieces[i]; suffix[i] = length of the
	// text made of pieces[i:] with separators.
	sizes := make([]int, len(pieces))
	for i, p := range pieces {
		sizes[i] = tokens.Units(p)
	}
	suffix := make([]int, len(pieces)+1)
	for i := len(pieces) - 1; i >= 0; i-- {
		suffix[i] = sizes[i]
		if i < len(pieces)-1 {
			suffix[i] += 2 + suffix[i+1]
		}
	}
	total := suffix[0]
	if budgetTokens <= 0 || (total+3)/4 <= budgetTokens {
		text := strings.Join(pieces, "\n\n")
		return Fitted{Text: text, Tokens: (total + 3) / 4}, nil
	}
	head := -1
	for i, p := range pieces {
		if strings.HasPrefix(p, "[User]: ") {
			head = i
			break
		}
	}
	if head == len(pieces)-1 {
		head = -1 // the only request is the last message: keep it as the tail
	}
	headLen := 0
	if head >= 0 {
		headLen = sizes[head] + 2
	}
	for t := head + 2; t < len(pieces); t++ {
		omitted := t - head - 1
		omittedUnits := suffix[head+1] - suffix[t] - 2
		marker := omissionMarker(omitted, (omittedUnits+3)/4)
		n := headLen + tokens.Units(marker) + 2 + suffix[t]
		if (n+3)/4 > budgetTokens {
			continue
		}
		var b strings.Builder
		if head >= 0 {
			b.WriteString(pieces[head])
			b.WriteString("\n\n")
		}
		b.WriteString(marker)
		b.WriteString("\n\n")
		b.WriteString(strings.Join(pieces[t:], "\n\n"))
		return Fitted{Text: b.String(), Tokens: (n + 3) / 4, OmittedMessages: omitted, OmittedTokens: (omittedUnits + 3) / 4}, nil
	}
	return Fitted{}, fmt.Errorf("%w: %d messages of ~%d tokens, budget %d tokens, even without the middle part",
		ErrInputTooLarge, len(msgs), (total+3)/4, budgetTokens)
}

func omissionMarker(messages, tokens int) string {
	return fmt.Sprintf("[... %d older messages (~%d tokens) omitted here to fit the summarizer's input window ...]", messages, tokens)
}
