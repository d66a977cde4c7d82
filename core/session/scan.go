package session

import (
	"encoding/json"

	"github.com/pith-dev/pith/core/tokens"
)

// Reading entry lines: the scanner's policy for the hot path of opening a
// session (see jsonscan.go). scanEntry validates a whole line and on the
// way records the envelope fields and, for message entries, where the
// message is and its role, provider, model and stop reason; everything
// else is skipped without being decoded.

// stringValue scans a value and returns it as a string when it is a string
// without escapes (the envelope fields always are); ok is false otherwise.
func (p *scanner) stringValue(depth int) (string, bool) {
	if p.i < len(p.s) && p.s[p.i] == '"' {
		c, esc := p.str()
		if p.err == "" && !esc {
			return unsafeString(c), true
		}
		if p.err == "" {
			return decodeEscaped(c), true
		}
		return "", false
	}
	p.value(depth)
	return "", false
}

// scanEntry validates a line and fills e. It returns "" or why the line
// is not an entry.
func scanEntry(l []byte, e *Entry) string { return scanLine(l, e, false) }

// scanLine is scanEntry that, with measure, also records the estimate of
// a message entry's message (see messageMeasure).
func scanLine(l []byte, e *Entry, measure bool) string {
	p := scanner{s: l}
	p.ws()
	if p.i >= len(l) || l[p.i] != '{' {
		if p.i < len(l) {
			p.value(0)
			p.ws()
			if p.err == "" && p.i == len(l) {
				return "not a JSON object"
			}
			if p.err != "" {
				return "malformed JSON: " + p.err
			}
		}
		return "malformed JSON"
	}
	var typ string
	hasType := false
	// The message's estimate, measured on the way (see messageMeasure).
	m := messageMeasure{unmeasured: true}
	e.msgStart, e.msgEnd = 0, 0
	e.toolPaths, e.toolsKnown = nil, false
	p.object(0, func(key []byte, esc bool) bool {
		switch string(keyText(key, esc)) {
		case "type":
			typ, hasType = p.stringValue(1)
			return true
		case "id":
			e.ID, _ = p.stringValue(1)
			return true
		case "parentId":
			e.ParentID, _ = p.stringValue(1)
			return true
		case "message":
			if p.i < len(p.s) && p.s[p.i] == '{' {
				start := p.i
				e.role, e.provider, e.model, e.stopReason = "", "", "", ""
				m = messageMeasure{unmeasured: !measure}
				p.object(1, func(k []byte, esc bool) bool {
					switch string(keyText(k, esc)) {
					case "role":
						e.role, _ = p.stringValue(2)
						if !m.seen(seenRole) {
							m.parts.Role = e.role
						}
					case "provider":
						e.provider, _ = p.stringValue(2)
					case "model":
						e.model, _ = p.stringValue(2)
					case "stopReason":
						e.stopReason, _ = p.stringValue(2)
					case "content":
						if !measure {
							if p.i < len(p.s) && p.s[p.i] == '[' {
								e.toolPaths = p.toolCalls(e.toolPaths[:0], nil)
								return true
							}
							e.toolPaths = e.toolPaths[:0]
							return false
						}
						first := !m.seen(seenContent)
						switch {
						case p.i < len(p.s) && p.s[p.i] == '[':
							var parts *tokens.MessageParts
							if first {
								parts = &m.parts
							}
							e.toolPaths = p.toolCalls(e.toolPaths[:0], parts)
							return true
						case first && p.i < len(p.s) && p.s[p.i] == '"':
							m.parts.ContentIsString = true
							m.parts.ContentUnits, _ = p.stringUnits()
							e.toolPaths = e.toolPaths[:0]
							return true
						case first && p.i < len(p.s) && p.s[p.i] == '{':
							// Blocks as an object's values: rare enough
							// to leave to the lazy estimate.
							m.unmeasured = true
						}
						e.toolPaths = e.toolPaths[:0]
						return false
					case "command":
						return measure && m.measure(&p, seenCommand, &m.parts.Command)
					case "output":
						return measure && m.measure(&p, seenOutput, &m.parts.Output)
					case "summary":
						return measure && m.measure(&p, seenSummary, &m.parts.Summary)
					default:
						return false
					}
					return true
				})
				e.msgStart, e.msgEnd = start, p.i
				e.toolsKnown = true
				return true
			}
			// A later non-object "message" replaces an earlier one, as
			// with JSON.parse.
			e.msgStart, e.msgEnd = 0, 0
			e.role, e.provider, e.model, e.stopReason = "", "", "", ""
			e.toolPaths, e.toolsKnown = nil, false
			m = messageMeasure{unmeasured: true}
		}
		return false
	})
	if p.err != "" {
		return "malformed JSON: " + p.err
	}
	p.ws()
	if p.i != len(l) {
		return "malformed JSON: text after the object"
	}
	if !hasType {
		typ = ""
	}
	e.Type = intern(typ)
	e.role = internRole(e.role)
	if e.Type == TypeSession {
		return "a second session header"
	}
	e.Raw = l
	e.msgTokens = 0
	if e.Type == TypeMessage && e.msgEnd > e.msgStart && !m.unmeasured {
		e.msgTokens = int64((m.parts.Chars()+3)/4) + 1 // as MessageTokens caches it
	}
	return ""
}

// decodeEscaped decodes the content of a JSON string that has escapes.
func decodeEscaped(content []byte) string {
	var out string
	q := make([]byte, 0, len(content)+2)
	q = append(append(append(q, '"'), content...), '"')
	if json.Unmarshal(q, &out) != nil {
		return string(content)
	}
	return out
}

// toolCalls scans a message's content array, validating it as value()
// would, and appends the read/write/edit tool calls that carry a non-empty
// string path (docs/behaviour.md §5.8). Recording them here, while the line is scanned
// anyway, saves compaction from searching every assistant message again.
// With parts set it also measures the blocks for the estimate: the first
// value of each key counts there (as in tokens.Chars), the last one for a
// tool path (as in JSON.parse).
func (p *scanner) toolCalls(out []ToolPath, parts *tokens.MessageParts) []ToolPath {
	// The array is at depth 2 (line, message), its elements at 3.
	for more := p.firstElement(); more; more = p.nextElement() {
		if p.i >= len(p.s) || p.s[p.i] != '{' {
			p.value(3)
			continue
		}
		var typ, name, path string
		var b tokens.BlockParts
		var seen seenKeys
		p.object(3, func(k []byte, esc bool) bool {
			switch string(keyText(k, esc)) {
			case "type":
				typ, _ = p.stringValue(4)
				if !seen.add(seenType) {
					b.Type = typ
				}
			case "name":
				nameAt := p.i
				name, _ = p.stringValue(4)
				if parts != nil && !seen.add(seenName) {
					b.Name = stringUnitsAt(p.s, nameAt, p.i)
				}
			case "text":
				if parts == nil || seen.add(seenText) || p.i >= len(p.s) || p.s[p.i] != '"' {
					return false
				}
				b.Text, _ = p.stringUnits()
			case "thinking":
				if parts == nil || seen.add(seenThinking) || p.i >= len(p.s) || p.s[p.i] != '"' {
					return false
				}
				b.Thinking, _ = p.stringUnits()
			case "arguments":
				path = ""
				if parts != nil && !seen.add(seenArguments) {
					// The first arguments count: printed while scanned.
					b.Arguments = p.arguments(&path)
					return true
				}
				if p.i < len(p.s) && p.s[p.i] == '{' {
					p.object(4, func(k2 []byte, esc bool) bool {
						if string(keyText(k2, esc)) != "path" {
							return false
						}
						path, _ = p.stringValue(5) // the last one wins, as in JSON.parse
						return true
					})
				} else {
					p.value(4)
				}
			default:
				return false
			}
			return true
		})
		if parts != nil && p.err == "" {
			parts.AddBlock(b)
		}
		if typ == "toolCall" && path != "" && (name == "read" || name == "write" || name == "edit") {
			out = append(out, ToolPath{Name: name, Path: path})
		}
	}
	return out
}
