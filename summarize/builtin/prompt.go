package builtin

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// promptSource is what the built-in summarizer recovers from a prompt when
// no Transcript came with the request: the serialized conversation of docs/behaviour.md
// §6 turned back into events, and the blocks of §7 around it.
type promptSource struct {
	events          []event
	hasConversation bool
	previous        string
	contextLines    []string
	instructions    string
}

// Block markers of the serialized conversation (docs/behaviour.md §6).
const (
	mkUser     = "[User]: "
	mkThinking = "[Assistant thinking]: "
	mkAsst     = "[Assistant]: "
	mkCalls    = "[Assistant tool calls]: "
	mkResult   = "[Tool result]: "
)

var blockMarkers = []string{mkUser, mkThinking, mkAsst, mkCalls, mkResult}

// parsePrompt reads a prompt laid out as docs/behaviour.md §7 describes. Each part is
// optional; with no conversation block, a prompt that itself starts with a
// block marker is read as a bare conversation.
func parsePrompt(prompt string) promptSource {
	var ps promptSource
	lines := strings.Split(strings.ReplaceAll(prompt, "\r\n", "\n"), "\n")
	open, close := -1, -1
	for i, l := range lines {
		if open < 0 && strings.TrimSpace(l) == "<conversation>" {
			open = i
		}
		if open >= 0 && i > open && strings.TrimSpace(l) == "</conversation>" {
			close = i // the last closing line wins: the text may quote the tag
		}
	}
	rest := lines
	switch {
	case open >= 0 && close > open:
		ps.events = parseConversation(lines[open+1 : close])
		ps.hasConversation = true
		rest = lines[close+1:]
	case startsWithMarker(strings.TrimLeft(prompt, "\n")):
		ps.events = parseConversation(lines)
		ps.hasConversation = true
		return ps
	}
	ps.previous = taggedBlock(rest, "previous-summary")
	if ctxBlock := taggedBlock(rest, "additional-context"); ctxBlock != "" {
		for _, l := range strings.Split(ctxBlock, "\n") {
			if t, ok := strings.CutPrefix(l, "- "); ok {
				ps.contextLines = append(ps.contextLines, t)
			}
		}
	}
	for i := len(rest) - 1; i >= 0; i-- {
		if t, ok := strings.CutPrefix(rest[i], "Additional focus:"); ok {
			ps.instructions = strings.TrimSpace(t + "\n" + strings.Join(rest[i+1:], "\n"))
			break
		}
	}
	return ps
}

func startsWithMarker(s string) bool {
	for _, m := range blockMarkers {
		if strings.HasPrefix(s, m) {
			return true
		}
	}
	return false
}

// taggedBlock returns the text between a line "<tag>" and the last line
// "</tag>" after it. Without a closing line (the additional-context list
// may come without one) it runs to the first blank line.
func taggedBlock(lines []string, tag string) string {
	open := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "<"+tag+">" {
			open = i
			break
		}
	}
	if open < 0 {
		return ""
	}
	end := -1
	for i := open + 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "</"+tag+">" {
			end = i
		}
	}
	if end < 0 {
		end = open + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
			end++
		}
	}
	return strings.Join(lines[open+1:end], "\n")
}

// parseConversation splits the serialized conversation into blocks — a
// block starts at a marker at the start of the text or after a blank line —
// and rebuilds the messages.
func parseConversation(lines []string) []event {
	type block struct {
		marker string
		text   []string
	}
	var blocks []block
	for i, l := range lines {
		m := ""
		if i == 0 || strings.TrimSpace(lines[i-1]) == "" {
			for _, mk := range blockMarkers {
				if strings.HasPrefix(l, mk) {
					m = mk
					break
				}
			}
		}
		if m != "" {
			blocks = append(blocks, block{marker: m, text: []string{strings.TrimPrefix(l, m)}})
			continue
		}
		if len(blocks) > 0 {
			blocks[len(blocks)-1].text = append(blocks[len(blocks)-1].text, l)
		}
	}
	var events []event
	var pending []toolCall // calls still waiting for their results, in order
	asst := -1             // index of the assistant event being assembled
	rank := 0              // rank of its last part: thinking 1, text 2, calls 3
	callN := 0
	for _, b := range blocks {
		text := strings.TrimRight(strings.Join(b.text, "\n"), "\n")
		partRank := map[string]int{mkThinking: 1, mkAsst: 2, mkCalls: 3}[b.marker]
		if partRank > 0 {
			if asst < 0 || partRank <= rank {
				events = append(events, event{kind: evAssistant})
				asst = len(events) - 1
			}
			rank = partRank
			ev := &events[asst]
			switch b.marker {
			case mkThinking:
				ev.thinking = text
			case mkAsst:
				ev.text = text
			case mkCalls:
				// The serialized form carries no call ids: number the calls
				// so results pair with them the way transcript ids do.
				ev.calls = parseCalls(text)
				for j := range ev.calls {
					callN++
					ev.calls[j].id = "p" + strconv.Itoa(callN)
				}
				pending = append(pending, ev.calls...)
			}
			continue
		}
		asst, rank = -1, 0
		switch b.marker {
		case mkUser:
			events = append(events, userBlockEvent(text))
		case mkResult:
			ev := event{kind: evToolResult, text: text, isError: looksLikeErrorOutput(text)}
			if len(pending) > 0 {
				ev.callID, ev.toolName = pending[0].id, pending[0].name
				pending = pending[1:]
			}
			events = append(events, ev)
		}
	}
	return events
}

var (
	ranCommand  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^Ran `([^\n]*)`\n") })
	summaryWrap = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^(.*?)<summary>\n?(.*?)\n?</summary>\s*$`) })
)

// userBlockEvent recognises what convertToLlm turned into user text: a
// direct bash execution and the framed summaries. Custom messages cannot be
// told from the user's own words and stay user text.
func userBlockEvent(text string) event {
	if m := ranCommand().FindStringSubmatch(text); m != nil {
		ev := event{kind: evBash, command: m[1]}
		body, tail := text[len(m[0]):], ""
		switch {
		case strings.HasPrefix(body, "```"):
			body = strings.TrimPrefix(body[3:], "\n")
			if end := strings.LastIndex(body, "```"); end >= 0 {
				ev.text, tail = strings.TrimSuffix(body[:end], "\n"), body[end+3:]
			} else {
				ev.text = body
			}
		case strings.HasPrefix(body, "(no output)"):
			tail = body
		default:
			ev.text = body
		}
		ev.cancelled = strings.Contains(tail, "(command cancelled)")
		if !ev.cancelled {
			code := 0
			if c := exitCodePattern().FindStringSubmatch(tail); c != nil {
				code, _ = strconv.Atoi(c[1])
			}
			ev.exit = &code
		}
		return ev
	}
	if m := summaryWrap().FindStringSubmatch(text); m != nil && !strings.Contains(m[1], "\n\n\n") {
		kind := evSummary
		if strings.Contains(strings.ToLower(m[1]), "branch") {
			kind = evBranchSummary
		}
		return event{kind: kind, text: m[2]}
	}
	return event{kind: evUser, text: text}
}

// looksLikeErrorOutput guesses whether a tool result was an error: the
// serialized form drops isError, so the first line and a non-zero exit code
// are all there is to go on.
func looksLikeErrorOutput(text string) bool {
	first := strings.ToLower(strings.TrimSpace(firstLine(text)))
	for _, p := range []string{"error", "fatal", "failed", "failure", "exception", "traceback", "panic", "could not", "cannot", "permission denied", "no such file"} {
		if strings.HasPrefix(first, p) {
			return true
		}
	}
	if m := exitCodePattern().FindStringSubmatch(text); m != nil && m[1] != "0" {
		return true
	}
	return false
}

// parseCalls reads `name(key=<json>, …); name(…)`. It stops at the first
// thing it cannot read, keeping the calls read so far.
func parseCalls(s string) []toolCall {
	var calls []toolCall
	for s != "" {
		open := strings.IndexByte(s, '(')
		if open <= 0 {
			break
		}
		c := toolCall{name: strings.TrimSpace(s[:open])}
		s = s[open+1:]
		ok := false
		for {
			if strings.HasPrefix(s, ")") {
				s, ok = s[1:], true
				break
			}
			eq := strings.IndexByte(s, '=')
			if eq <= 0 {
				break
			}
			key := s[:eq]
			dec := json.NewDecoder(strings.NewReader(s[eq+1:]))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				break
			}
			c.args = append(c.args, toolArg{key: key, raw: string(bytes.TrimSpace(raw))})
			s = s[eq+1+int(dec.InputOffset()):]
			s = strings.TrimPrefix(s, ", ")
		}
		if !ok {
			if c.name != "" {
				calls = append(calls, c)
			}
			break
		}
		calls = append(calls, c)
		s = strings.TrimPrefix(s, "; ")
	}
	return calls
}
