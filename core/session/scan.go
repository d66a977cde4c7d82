package session

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"

	"github.com/pith-dev/pith/core/jsondepth"
)

// A single-pass validating scanner for entry lines. It checks the whole line
// against the JSON grammar (as strictly as JSON.parse, except that bytes are
// not checked for valid UTF-8: Node decodes files leniently too), and on the
// way records the envelope fields and, for message entries, where the
// message is and its role, provider, model and stop reason. Everything else
// is skipped without being decoded. This is the hot path of opening a
// session: it must run at memory-scan speed.
//
// The scanner recurses once per nesting level, so it refuses to open an
// array or object deeper than jsondepth.Max: a hostile line nested millions
// deep is malformed, never a stack overflow.

type scanner struct {
	s   []byte
	i   int
	err string
}

func (p *scanner) fail(msg string) {
	if p.err == "" {
		p.err = msg
	}
}

func (p *scanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// str scans a string starting at its opening quote. It returns the raw
// content (without quotes) and whether it contained escapes.
func (p *scanner) str() (content []byte, escaped bool) {
	start := p.i + 1
	i := start
	s := p.s
	for {
		// Find the next quote, backslash or control character eight bytes
		// at a time. Tool outputs are long strings full of escapes, so
		// this loop is where opening a session spends its time.
		for i+8 <= len(s) {
			m := specialMask(binary.LittleEndian.Uint64(s[i:]))
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i+8 > len(s) {
			for i < len(s) && !strSpecial[s[i]] {
				i++
			}
		}
		if i >= len(s) {
			p.fail("unterminated string")
			return nil, false
		}
		switch c := s[i]; {
		case c == '"':
			p.i = i + 1
			return s[start:i], escaped
		case c == '\\':
			escaped = true
			if i+1 < len(s) {
				switch s[i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					i += 2
					continue
				case 'u':
					if i+5 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
						i += 6
						continue
					}
				}
			}
			p.fail("invalid escape in a string")
			return nil, false
		default:
			p.fail("control character in a string")
			return nil, false
		}
	}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specialMask has the high bit set in each byte of x that is '"', '\\' or
// below 0x20, and possibly in bytes above such a byte (a borrow can carry
// upwards), never below: so its lowest set bit is exactly the first one.
func specialMask(x uint64) uint64 {
	quote := x ^ (ones * '"')
	slash := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x | (quote-ones)&^quote | (slash-ones)&^slash) & highs
}

// strSpecial marks the bytes that end a plain run inside a string.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// value skips any JSON value, validating it. depth is the number of arrays
// and objects around the value.
func (p *scanner) value(depth int) {
	p.ws()
	if p.i >= len(p.s) {
		p.fail("unexpected end of line")
		return
	}
	switch c := p.s[p.i]; {
	case c == '"':
		p.str()
	case c == '{':
		p.object(depth, nil)
	case c == '[':
		p.array(depth)
	case c == 't':
		p.literal("true")
	case c == 'f':
		p.literal("false")
	case c == 'n':
		p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		p.number()
	default:
		p.fail("unexpected character")
	}
}

func (p *scanner) literal(lit string) {
	if len(p.s)-p.i >= len(lit) && string(p.s[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return
	}
	p.fail("invalid literal")
}

func (p *scanner) number() {
	s, i := p.s, p.i
	if s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		p.fail("invalid number")
		return
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			p.fail("invalid number")
			return
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.fail("invalid number")
			return
		}
	}
	p.i = i
}

// tooDeep fails the scan when a container enclosed by depth others would
// exceed the nesting limit.
func (p *scanner) tooDeep(depth int) bool {
	if depth >= jsondepth.Max {
		p.fail("nested deeper than " + maxDepthText + " levels")
		return true
	}
	return false
}

var maxDepthText = strconv.Itoa(jsondepth.Max)

func (p *scanner) array(depth int) {
	if p.tooDeep(depth) {
		return
	}
	p.i++ // [
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return
	}
	for p.err == "" {
		p.value(depth + 1)
		p.ws()
		if p.i >= len(p.s) {
			p.fail("unterminated array")
			return
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return
		default:
			p.fail("expected , or ] in an array")
			return
		}
	}
}

// object scans an object; onKey, when set, is called for each key with the
// scanner positioned at the value and must consume it (or leave it to the
// default skip by returning false).
func (p *scanner) object(depth int, onKey func(key []byte, escaped bool) bool) {
	if p.tooDeep(depth) {
		return
	}
	p.i++ // {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return
	}
	for p.err == "" {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			p.fail("expected a key in an object")
			return
		}
		key, esc := p.str()
		if p.err != "" {
			return
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			p.fail("expected : after a key")
			return
		}
		p.i++
		p.ws()
		if onKey == nil || !onKey(key, esc) {
			p.value(depth + 1)
		}
		p.ws()
		if p.i >= len(p.s) {
			p.fail("unterminated object")
			return
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return
		default:
			p.fail("expected , or } in an object")
			return
		}
	}
}

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
func scanEntry(l []byte, e *Entry) string {
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
	e.msgStart, e.msgEnd = 0, 0
	e.toolPaths, e.toolsKnown = nil, false
	p.object(0, func(key []byte, esc bool) bool {
		if esc {
			key = []byte(decodeEscaped(key))
		}
		switch string(key) {
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
				p.object(1, func(k []byte, esc bool) bool {
					if esc {
						k = []byte(decodeEscaped(k))
					}
					switch string(k) {
					case "role":
						e.role, _ = p.stringValue(2)
					case "provider":
						e.provider, _ = p.stringValue(2)
					case "model":
						e.model, _ = p.stringValue(2)
					case "stopReason":
						e.stopReason, _ = p.stringValue(2)
					case "content":
						if p.i < len(p.s) && p.s[p.i] == '[' {
							e.toolPaths = p.toolCalls(e.toolPaths[:0])
							return true
						}
						e.toolPaths = e.toolPaths[:0]
						return false
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
func (p *scanner) toolCalls(out []ToolPath) []ToolPath {
	p.i++ // [
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return out
	}
	for p.err == "" {
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '{' {
			var typ, name, path string
			p.object(3, func(k []byte, esc bool) bool {
				if esc {
					k = []byte(decodeEscaped(k))
				}
				switch string(k) {
				case "type":
					typ, _ = p.stringValue(4)
				case "name":
					name, _ = p.stringValue(4)
				case "arguments":
					path = ""
					if p.i < len(p.s) && p.s[p.i] == '{' {
						p.object(4, func(k2 []byte, esc bool) bool {
							if esc {
								k2 = []byte(decodeEscaped(k2))
							}
							if string(k2) != "path" {
								return false
							}
							path, _ = p.stringValue(5) // the last one wins, as in JSON.parse
							return true
						})
						return true
					}
					return false
				default:
					return false
				}
				return true
			})
			if typ == "toolCall" && path != "" && (name == "read" || name == "write" || name == "edit") {
				out = append(out, ToolPath{Name: name, Path: path})
			}
		} else {
			p.value(3)
		}
		p.ws()
		if p.i >= len(p.s) {
			p.fail("unterminated array")
			return out
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return out
		default:
			p.fail("expected , or ] in an array")
			return out
		}
	}
	return out
}
