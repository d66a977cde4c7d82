package tokens

import (
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// Chars returns the characters a message counts for before the division
// (docs/behaviour.md §3), read from the message's raw JSON in one pass: the fields the
// role needs are located by skipping everything else byte-wise, and only
// the strings that count are measured — nothing is decoded or copied.
// This is the hot path of every estimate (calibration, cut point, prepare,
// context accounting), so it must run at memory-scan speed.
//
// Where a key appears twice in an object the first one counts, and a
// content object's values are visited like an array's elements: the same
// answer as the generic JSON-path reading this replaced, which the tests
// keep as the reference.
func Chars(raw []byte) int {
	p := charScan{s: unsafeString(raw)}
	p.ws()
	if !p.at('{') {
		return 0
	}
	var f fields
	p.members(&messageKeys, &f)
	role, content, command, output, summary := f[0], f[1], f[2], f[3], f[4]
	switch p.text(role) {
	case "user":
		if p.isString(content) {
			return p.units(content)
		}
		return p.blocks(content, userBlocks)
	case "assistant":
		return p.blocks(content, assistantBlocks)
	case "toolResult", "custom":
		if p.isString(content) {
			return p.units(content)
		}
		return p.blocks(content, resultBlocks)
	case "bashExecution":
		return p.units(command) + p.units(output)
	case "branchSummary", "compactionSummary":
		return p.units(summary)
	}
	return 0
}

// Which content blocks count, by role: text always; thinking and tool
// calls in an assistant message; images in a tool result or custom message.
type blockKind int

const (
	userBlocks blockKind = iota
	assistantBlocks
	resultBlocks
)

// span is where a value lies in the scanned text; set is false for a key
// that was not found.
type span struct {
	start, end int
	set        bool
}

type charScan struct {
	s string
	i int
}

func (p *charScan) at(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

func (p *charScan) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// The keys Chars reads, of a message and of a content block, and where
// their first values are (no closures: nothing escapes to the heap).
type fields [5]span

var (
	messageKeys = [5]string{"role", "content", "command", "output", "summary"}
	blockKeys   = [5]string{"type", "text", "thinking", "name", "arguments"}
)

// members walks the object at p.i (positioned on its '{') and records in
// out the span of the first value of each of keys.
func (p *charScan) members(keys *[5]string, out *fields) {
	p.i++ // {
	for {
		p.ws()
		if !p.at('"') {
			if p.at('}') {
				p.i++
			}
			return
		}
		ks := p.i
		esc := p.skipString()
		key := p.s[ks+1 : max(ks+1, p.i-1)]
		if esc {
			key = decodeKey(p.s[ks:p.i])
		}
		p.ws()
		if !p.at(':') {
			return
		}
		p.i++
		p.ws()
		vs := p.i
		p.skipValue()
		for k := range keys {
			if keys[k] == key {
				if !out[k].set {
					out[k] = span{start: vs, end: p.i, set: true}
				}
				break
			}
		}
		p.ws()
		if !p.at(',') {
			if p.at('}') {
				p.i++
			}
			return
		}
		p.i++
	}
}

// blocks sums the content blocks of an array (or the values of an object)
// by their type, as kind says.
func (p *charScan) blocks(c span, kind blockKind) int {
	if !c.set || c.end <= c.start || (p.s[c.start] != '[' && p.s[c.start] != '{') {
		return 0
	}
	obj := p.s[c.start] == '{'
	q := charScan{s: p.s[:c.end], i: c.start + 1}
	chars := 0
	for {
		q.ws()
		if obj {
			if !q.at('"') {
				return chars
			}
			q.skipString()
			q.ws()
			if !q.at(':') {
				return chars
			}
			q.i++
			q.ws()
		}
		if q.i >= len(q.s) || q.s[q.i] == ']' || q.s[q.i] == '}' {
			return chars
		}
		if q.at('{') {
			chars += q.block(kind)
		} else {
			q.skipValue()
		}
		q.ws()
		if !q.at(',') {
			return chars
		}
		q.i++
	}
}

// block measures one content block at q.i, leaving q after it.
func (q *charScan) block(kind blockKind) int {
	var f fields
	q.members(&blockKeys, &f)
	typ, text, thinking, name, args := f[0], f[1], f[2], f[3], f[4]
	b := BlockParts{Type: q.text(typ)}
	switch b.Type {
	case "text":
		b.Text = q.units(text)
	case "thinking":
		b.Thinking = q.units(thinking)
	case "toolCall":
		b.Name = q.units(name)
		if args.set {
			b.Arguments = StringifiedLen(unsafeBytes(q.s[args.start:args.end]))
		}
	}
	return blockChars(b, kind)
}

func (p *charScan) isString(v span) bool { return v.set && v.end > v.start && p.s[v.start] == '"' }

// text is a short string value decoded (role and type names), or "".
func (p *charScan) text(v span) string {
	if !p.isString(v) || v.end-v.start < 2 {
		return ""
	}
	lit := p.s[v.start:v.end]
	inner := lit[1 : len(lit)-1]
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' {
			return decodeKey(lit)
		}
	}
	return inner
}

// units is the UTF-16 length of a string value's decoded text; a value
// that is not a string counts 0.
func (p *charScan) units(v span) int {
	if !p.isString(v) || v.end-v.start < 2 {
		return 0
	}
	return decodedUnits(p.s[v.start+1 : v.end-1])
}

func decodeKey(lit string) string {
	var s string
	if json.Unmarshal(unsafeBytes(lit), &s) != nil {
		return ""
	}
	return s
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasQuoteOrBackslash reports whether a word holds '"' or '\\'. A borrow
// can only add a false hit above a true one, so the answer is exact.
func hasQuoteOrBackslash(x uint64) bool {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((q-ones)&^q|(b-ones)&^b)&highs != 0
}

// skipString moves past the string at p.i and reports whether it had
// escapes. Tool outputs are long strings, so it goes eight bytes at a time.
func (p *charScan) skipString() (escaped bool) {
	s := p.s
	i := p.i + 1
	for {
		for i+8 <= len(s) && !hasQuoteOrBackslash(binary.LittleEndian.Uint64(unsafeBytes(s[i:i+8]))) {
			i += 8
		}
		for i < len(s) && s[i] != '"' && s[i] != '\\' {
			i++
		}
		if i >= len(s) {
			p.i = len(s)
			return escaped
		}
		if s[i] == '"' {
			p.i = i + 1
			return escaped
		}
		escaped = true
		i += 2
	}
}

// skipValue moves past any value without recursion: the input was
// validated when its line was read, and a broken one ends the walk early
// but never reads out of bounds.
func (p *charScan) skipValue() {
	depth := 0
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '"':
			p.skipString()
		case '{', '[':
			depth++
			p.i++
		case '}', ']':
			if depth == 0 {
				return
			}
			depth--
			p.i++
		case ',':
			if depth == 0 {
				return
			}
			p.i++
		default:
			p.i++
		}
		if depth == 0 {
			// A scalar ends at the next delimiter; a string or container
			// has just ended.
			if c == '"' || c == '}' || c == ']' {
				return
			}
			for p.i < len(p.s) {
				switch p.s[p.i] {
				case ',', '}', ']', ' ', '\t', '\n', '\r':
					return
				}
				p.i++
			}
		}
	}
}

// decodedUnits is the UTF-16 length of the decoded text of a JSON string's
// content (without its quotes): jsonStringUnits' first result, with a fast
// path over plain ASCII eight bytes at a time.
func decodedUnits(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(unsafeBytes(s[i : i+8]))
			if x&highs == 0 {
				b := x ^ (ones * '\\')
				if (b-ones)&^b&highs == 0 {
					n += 8
					i += 8
					continue
				}
			}
		}
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			if s[i+1] == 'u' && i+5 < len(s) {
				i += 6 // a surrogate pair is two escapes: two units either way
			} else {
				i += 2
			}
			n++
		case c < utf8.RuneSelf:
			n++
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			n++
			if r >= 0x10000 {
				n++
			}
		}
	}
	return n
}
