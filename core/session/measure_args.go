package session

import "github.com/pith-dev/pith/core/tokens"

// Measuring a tool call's arguments while they are scanned: an estimate
// counts them as JSON.stringify prints them (tokens.StringifiedLen), and
// arguments carry whole files. Printed as the scanner validates them,
// their bytes are read once instead of twice; tokens keeps the rules
// (AddMember, ObjectLen, NumberLen) and StringifiedLen stays the
// reference the tests compare with.

// arguments scans a content block's "arguments" value (at depth 4: the
// line, the message, the content array and the block enclose it) as
// value does and returns its printed length. When it is an object, the
// last string "path" member goes to path, as JSON.parse keeps it.
func (p *scanner) arguments(path *string) int {
	if p.i < len(p.s) && p.s[p.i] == '{' {
		return p.printedObject(4, path)
	}
	return p.printed(4)
}

// printed scans a value as value does (depth is the arrays and objects
// around it) and returns the length JSON.stringify prints for it; 0 when
// the scan fails, which refuses the line.
func (p *scanner) printed(depth int) int {
	p.ws()
	if p.i >= len(p.s) {
		p.fail("unexpected end of line")
		return 0
	}
	switch c := p.s[p.i]; {
	case c == '"':
		_, n := p.stringUnits()
		return n
	case c == '{':
		return p.printedObject(depth, nil)
	case c == '[':
		if p.tooDeep(depth) {
			return 0
		}
		n := 2
		for more, first := p.firstElement(), true; more; more, first = p.nextElement(), false {
			if !first {
				n++ // the comma
			}
			n += p.printed(depth + 1)
		}
		return n
	case c == 't':
		p.literal("true")
		return 4
	case c == 'f':
		p.literal("false")
		return 5
	case c == 'n':
		p.literal("null")
		return 4
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		p.number()
		if p.err != "" {
			return 0
		}
		return tokens.NumberLen(p.s[start:p.i])
	default:
		p.fail("unexpected character")
		return 0
	}
}

// printedObject is printed for the object at p.i, and with path set
// records its last string "path" member there.
func (p *scanner) printedObject(depth int, path *string) int {
	var small [8]tokens.Member
	members := small[:0]
	p.object(depth, func(key []byte, esc bool) bool {
		at := p.keyAt(key)
		lit := unsafeString(p.s[at : at+len(key)+2])
		var n int
		if path != nil && string(keyText(key, esc)) == "path" {
			valueAt := p.i
			*path, _ = p.stringValue(depth + 1)
			if p.err == "" {
				n = tokens.StringifiedLen(p.s[valueAt:p.i]) // short: a path
			}
		} else {
			n = p.printed(depth + 1)
		}
		members = tokens.AddMember(members, lit, n)
		return true
	})
	return tokens.ObjectLen(members)
}
