package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// clipChars is how much of a tool result, thinking block or command output
// goes to the summarizer (docs/behaviour.md §6).
const clipChars = 2000

// systemPrompt keeps the model to its one job, and tells it what the
// redaction markers are so it neither drops them nor invents values.
const systemPrompt = `You write checkpoint summaries of coding-agent sessions so that another model can continue the work from the summary alone. Only write the summary: do not continue the conversation, answer questions asked in it, or call tools. Some values in the conversation were replaced by markers such as [REDACTED:api-key]; keep a marker where the value matters and never guess what it hid.`

const sectionsPrompt = `Use exactly these Markdown sections:

## Goal
## Constraints & Preferences
## Progress
### Done
### In Progress
### Blocked
## Key Decisions
## Next Steps
## Critical Context

Keep exact file paths, function names, commands and error messages. If the user asked a question that was not answered yet, quote it verbatim under Next Steps. Be concise: bullets, no filler.`

const initialPrompt = "Summarize the conversation above into a checkpoint.\n\n" + sectionsPrompt

const updatePrompt = "The previous checkpoint summary is given above, followed by the conversation that happened since. Write one updated checkpoint: keep what still holds from the previous summary, move finished work to Done, and add the new progress, decisions and next steps.\n\n" + sectionsPrompt

const splitTurnNote = "\n\nThe conversation ends in the middle of a turn: <turn-prefix> holds the first part of that turn, whose rest is kept verbatim. End the summary with a section \"## Turn Context (split turn)\" saying what the turn asked for and what it had done so far."

// serialize renders messages as the plain-text blocks of docs/behaviour.md §6.
// A message that does not decode as a message is left out; one that is not
// JSON at all is an error, as it is to the full redaction (a message holding
// nothing a rule looks for reaches here unread).
func serialize(messages []json.RawMessage) ([]string, error) {
	var blocks []string
	for i, raw := range messages {
		b, err := serializeMessage(raw)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		blocks = append(blocks, b...)
	}
	return blocks, nil
}

// messageHead is what the prompt reads of a message besides its content.
type messageHead struct {
	Role     string `json:"role"`
	Summary  string `json:"summary"`
	Command  string `json:"command"`
	Output   string `json:"output"`
	ExitCode *int   `json:"exitCode"`
}

// message is a message with its content undecoded: the general form, read
// in two steps (blocks).
type message struct {
	messageHead
	Content json.RawMessage `json:"content"`
}

// textMessage and blocksMessage read a message and its content in one
// decode, when the content is known to be a string or an array.
type (
	textMessage struct {
		messageHead
		Content string `json:"content"`
	}
	blocksMessage struct {
		messageHead
		Content []block `json:"content"`
	}
)

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// blocks decodes the content: a string is one text block (as is
// null, which decodes into a string), an array is blocks; what does not
// decode as either holds none. An array with a malformed block keeps the
// blocks that decoded.
func (m *message) blocks() []block {
	if len(m.Content) == 0 {
		return nil
	}
	switch m.Content[0] {
	case '"', 'n':
		var s string
		if json.Unmarshal(m.Content, &s) != nil {
			return nil
		}
		return []block{{Type: "text", Text: s}}
	case '[':
		var bs []block
		_ = json.Unmarshal(m.Content, &bs)
		return bs
	}
	return nil
}

// text joins the non-empty text blocks.
func text(blocks []block) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func serializeMessage(raw json.RawMessage) ([]string, error) {
	m, blocks, ok, err := decodeMessage(raw)
	if !ok || err != nil {
		return nil, err
	}
	var out []string
	add := func(label, text string) {
		if strings.TrimSpace(text) != "" {
			out = append(out, "["+label+"]: "+text)
		}
	}
	switch m.Role {
	case "user":
		add("User", text(blocks))
	case "custom":
		add("User", clip(text(blocks)))
	case "assistant":
		var thinking, texts, calls []string
		for _, b := range blocks {
			switch b.Type {
			case "thinking":
				thinking = append(thinking, b.Thinking)
			case "text":
				texts = append(texts, b.Text)
			case "toolCall":
				calls = append(calls, b.Name+"("+arguments(b.Arguments)+")")
			}
		}
		add("Assistant thinking", clip(strings.Join(thinking, "\n")))
		add("Assistant", strings.Join(texts, "\n"))
		add("Assistant tool calls", strings.Join(calls, "; "))
	case "toolResult":
		add("Tool result", clip(text(blocks)))
	case "bashExecution":
		s := "Ran `" + m.Command + "`"
		if m.ExitCode != nil && *m.ExitCode != 0 {
			s += fmt.Sprintf(" (exit code %d)", *m.ExitCode)
		}
		if m.Output != "" {
			s += "\n" + clip(m.Output)
		}
		add("User", s)
	case "compactionSummary", "branchSummary":
		add("Summary of earlier work", m.Summary)
	}
	return out, nil
}

// arguments renders a tool call's arguments as key=<json>, keys sorted,
// each value spelled as in the re-encoded message (canonicalValue).
func arguments(raw json.RawMessage) string {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return ""
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + canonicalValue(args[k])
	}
	return strings.Join(parts, ", ")
}

// clip cuts s to clipChars characters and says how much was cut.
func clip(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= clipChars {
		return s
	}
	// The first clipChars characters, found without converting all of s
	// to runes; as the conversion would, invalid UTF-8 counts byte by byte
	// and becomes U+FFFD.
	end := 0
	for range clipChars {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	head := s[:end]
	if !utf8.ValidString(head) {
		head = string([]rune(head))
	}
	return head + fmt.Sprintf("\n\n[... %d more characters truncated]", n-clipChars)
}

// fit keeps the conversation within max characters by dropping the oldest
// blocks after the first one (the original request), replacing them with a
// note. It returns the blocks and how many were dropped.
func fit(blocks []string, max int) ([]string, int) {
	size := func(bs []string) int {
		n := 0
		for _, b := range bs {
			n += utf8.RuneCountInString(b) + 2
		}
		return n
	}
	if size(blocks) <= max || len(blocks) < 2 {
		return blocks, 0
	}
	head := blocks[:1]
	budget := max - size(head) - 100 // room for the note
	start := len(blocks)
	for start > 1 {
		n := utf8.RuneCountInString(blocks[start-1]) + 2
		if n > budget {
			break
		}
		budget -= n
		start--
	}
	dropped := start - 1
	note := fmt.Sprintf("[... %d earlier messages omitted to fit the summarizer's input limit ...]", dropped)
	out := append(append(append([]string{}, head...), note), blocks[start:]...)
	return out, dropped
}

// buildPrompt assembles the user prompt of docs/behaviour.md §7.
func buildPrompt(conversation, turnPrefix []string, previous, instructions string, dropped int) string {
	var sb strings.Builder
	sb.WriteString("<conversation>\n")
	sb.WriteString(strings.Join(conversation, "\n\n"))
	sb.WriteString("\n</conversation>\n\n")
	if len(turnPrefix) > 0 {
		sb.WriteString("<turn-prefix>\n")
		sb.WriteString(strings.Join(turnPrefix, "\n\n"))
		sb.WriteString("\n</turn-prefix>\n\n")
	}
	if previous != "" {
		sb.WriteString("<previous-summary>\n")
		sb.WriteString(previous)
		sb.WriteString("\n</previous-summary>\n\n")
	}
	if previous != "" {
		sb.WriteString(updatePrompt)
	} else {
		sb.WriteString(initialPrompt)
	}
	if len(turnPrefix) > 0 {
		sb.WriteString(splitTurnNote)
	}
	if dropped > 0 {
		fmt.Fprintf(&sb, "\n\nNote: %d older messages in the middle of the conversation were left out to fit the input limit; say so under Critical Context.", dropped)
	}
	if instructions = strings.TrimSpace(instructions); instructions != "" {
		sb.WriteString("\n\nAdditional focus: ")
		sb.WriteString(instructions)
	}
	return sb.String()
}

// fileBlocks are the file lists appended to every summary (docs/behaviour.md §7).
func fileBlocks(read, modified []string) string {
	var sb strings.Builder
	if len(read) > 0 {
		sb.WriteString("\n\n<read-files>\n" + strings.Join(read, "\n") + "\n</read-files>")
	}
	if len(modified) > 0 {
		sb.WriteString("\n\n<modified-files>\n" + strings.Join(modified, "\n") + "\n</modified-files>")
	}
	return sb.String()
}
