package builtin

import (
	"context"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/transcript"
)

// evKind is what an event of the built-in summarizer's input is. Both
// sources — a Transcript's messages and the serialized prompt text — are
// reduced to the same events, so one analysis serves both.
type evKind int

const (
	evUser evKind = iota
	evAssistant
	evToolResult
	evBash          // a command the user ran directly (bashExecution)
	evCustom        // a message a plugin put in the context
	evSummary       // a compaction summary inside the messages
	evBranchSummary // a branch summary inside the messages
)

// event is one message, reduced to what the summary uses.
type event struct {
	kind     evKind
	text     string // user, custom or tool result text; assistant visible text; summary
	thinking string
	calls    []toolCall
	stop     string // assistant stopReason
	errMsg   string // assistant errorMessage

	callID   string // tool result
	toolName string
	isError  bool

	command   string // bashExecution
	exit      *int
	cancelled bool

	label string // custom message type
}

// toolCall is an assistant tool call; args keep the order of the source.
type toolCall struct {
	id   string
	name string
	args []toolArg
}

type toolArg struct {
	key string
	raw string // JSON
}

// str returns the string value of argument key, "" when absent or not a
// string.
func (c toolCall) str(key string) string {
	for _, a := range c.args {
		if a.key == key {
			if v := gjson.Parse(a.raw); v.Type == gjson.String {
				return v.Str
			}
			return ""
		}
	}
	return ""
}

// target is what a call acts on, for grouping and for pairing an error
// with a later success: the path, else the command, else the first string
// argument.
func (c toolCall) target() string {
	if p := c.str("path"); p != "" {
		return p
	}
	if cmd := c.str("command"); cmd != "" {
		return cmd
	}
	for _, a := range c.args {
		if v := gjson.Parse(a.raw); v.Type == gjson.String && v.Str != "" {
			return v.Str
		}
	}
	return ""
}

// ctxCheckEvery is how many messages are processed between checks of the
// context: often enough to abort promptly, rarely enough to cost nothing.
const ctxCheckEvery = 256

// eventsFromMessages reads a transcript's messages. They are read with
// gjson rather than decoded: on a long transcript full decoding would be
// most of the summarizer's time. A message without a known role is
// skipped: the summary is best effort, and the session layer has already
// reported malformed lines.
func eventsFromMessages(ctx context.Context, msgs []session.Message) ([]event, error) {
	events := make([]event, 0, len(msgs))
	for i, m := range msgs {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if ev, ok := eventFromMessage(gjson.ParseBytes(m.Raw)); ok {
			events = append(events, ev)
		}
	}
	return events, nil
}

func eventFromMessage(m gjson.Result) (event, bool) {
	switch m.Get("role").Str {
	case session.RoleUser:
		return event{kind: evUser, text: transcript.ContentText(m.Get("content"), "")}, true
	case session.RoleAssistant:
		ev := event{kind: evAssistant, stop: m.Get("stopReason").Str, errMsg: m.Get("errorMessage").Str}
		var texts, thinking []string
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "text":
				if t := b.Get("text").Str; t != "" {
					texts = append(texts, t)
				}
			case "thinking":
				if t := b.Get("thinking").Str; t != "" {
					thinking = append(thinking, t)
				}
			case "toolCall":
				ev.calls = append(ev.calls, toolCall{id: b.Get("id").Str, name: b.Get("name").Str, args: objectArgs(b.Get("arguments"))})
			}
			return true
		})
		ev.text = strings.Join(texts, "\n")
		ev.thinking = strings.Join(thinking, "\n")
		return ev, true
	case session.RoleToolResult:
		return event{kind: evToolResult, text: transcript.ContentText(m.Get("content"), ""), callID: m.Get("toolCallId").Str,
			toolName: m.Get("toolName").Str, isError: m.Get("isError").Bool()}, true
	case session.RoleBashExecution:
		ev := event{kind: evBash, command: m.Get("command").Str, text: m.Get("output").Str, cancelled: m.Get("cancelled").Bool()}
		if c := m.Get("exitCode"); c.Type == gjson.Number {
			code := int(c.Int())
			ev.exit = &code
		}
		return ev, true
	case session.RoleCustom:
		return event{kind: evCustom, text: transcript.ContentText(m.Get("content"), "\n"), label: m.Get("customType").Str}, true
	case session.RoleCompactionSummary:
		return event{kind: evSummary, text: m.Get("summary").Str}, true
	case session.RoleBranchSummary:
		return event{kind: evBranchSummary, text: m.Get("summary").Str}, true
	}
	return event{}, false
}

// objectArgs lists a JSON object's members in file order.
func objectArgs(v gjson.Result) []toolArg {
	if !v.IsObject() {
		return nil
	}
	var args []toolArg
	v.ForEach(func(k, val gjson.Result) bool {
		args = append(args, toolArg{key: k.String(), raw: val.Raw})
		return true
	})
	return args
}

// describeCall renders a call for a fact line: the tool and its target.
func describeCall(c toolCall) string {
	if cmd := c.str("command"); cmd != "" && c.str("path") == "" {
		return fmt.Sprintf("`%s` `%s`", c.name, clip(flatten(commandLine(cmd)), clipCommand))
	}
	if t := c.target(); t != "" {
		return fmt.Sprintf("`%s` `%s`", c.name, clip(flatten(firstLine(t)), 120))
	}
	return "`" + c.name + "`"
}
