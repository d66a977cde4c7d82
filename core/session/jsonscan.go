package session

import (
	"encoding/binary"
	"math/bits"
	"strconv"

	"github.com/pith-dev/pith/core/jsondepth"
)

// The one JSON grammar of the package: a single-pass validating scanner
// that checks a value as strictly as JSON.parse (except that bytes are not
// checked for valid UTF-8: Node decodes files leniently too) and skips what
// its caller does not ask for without decoding it. Two policies share it,
// plugged in through the key callback of object:
//
//   - reading entry lines (scan.go) and walking validated JSON
//     (jsonwalk.go): the hot path of opening a session, which must run at
//     memory-scan speed, so nothing in the loops asks which policy runs;
//   - parsing what a client asks to append (strict.go): the same grammar,
//     plus a check of every key of every object (no key twice, no lone
//     surrogate escape) and a lower depth limit.
//
// The scanner recurses once per nesting level, so it refuses to open an
// array or object deeper than its limit: a hostile line nested millions
// deep is malformed, never a stack overflow.

type scanner struct {
	s   []byte
	i   int
	err string
	// errAt is where the first error was found.
	errAt int
	// shallower lowers the nesting limit below jsondepth.Max (a message
	// the strict parser checks before it is wrapped in an entry).
	shallower int
	// keys, when set, is a policy's key callback for each object that
	// value opens at depth (the strict parser's checks); nil on the hot
	// path.
	keys func(depth int) func(key []byte, escaped bool) bool
	// refused: err is a rule of a policy broken at errAt, not a syntax
	// error.
	refused bool
}

// fail records the first error. Out of line: errors are rare, and inlined
// in every check of str it costs the hot loop registers.
//
//go:noinline
func (p *scanner) fail(msg string) {
	if p.err == "" {
		p.err, p.errAt = msg, p.i
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
		var onKey func(key []byte, escaped bool) bool
		if p.keys != nil {
			onKey = p.keys(depth)
		}
		p.object(depth, onKey)
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
	if depth+p.shallower < jsondepth.Max {
		return false
	}
	p.failTooDeep()
	return true
}

//go:noinline
func (p *scanner) failTooDeep() {
	if p.keys != nil {
		p.refuse(p.i, tooDeepText) // a policy's limit, not a syntax error
	} else {
		p.fail(tooDeepText)
	}
}

// refuse fails the scan for breaking a rule of a policy at byte at.
func (p *scanner) refuse(at int, msg string) {
	if p.err == "" {
		p.err, p.errAt, p.refused = msg, at, true
	}
}

var tooDeepText = "nested deeper than " + strconv.Itoa(jsondepth.Max) + " levels"

// array scans an array at the opening bracket, skipping its elements.
func (p *scanner) array(depth int) {
	if p.tooDeep(depth) {
		return
	}
	for more := p.firstElement(); more; more = p.nextElement() {
		p.value(depth + 1)
	}
}

// firstElement and nextElement are the array grammar for a caller that
// reads the elements itself (array, toolCalls, ArrayElements):
//
//	for more := p.firstElement(); more; more = p.nextElement() {
//		// consume one element at p.i
//	}
//
// firstElement starts at the opening bracket (the caller has checked the
// depth); each reports whether an element follows, the scanner positioned
// at it.
func (p *scanner) firstElement() bool {
	p.i++ // [
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return false
	}
	return true
}

func (p *scanner) nextElement() bool {
	if p.err != "" {
		return false
	}
	p.ws()
	if p.i >= len(p.s) {
		p.fail("unterminated array")
		return false
	}
	switch p.s[p.i] {
	case ',':
		p.i++
		p.ws()
		return true
	case ']':
		p.i++
		return false
	default:
		p.fail("expected , or ] in an array")
		return false
	}
}

// object scans an object at the opening brace. onKey, when set, is called
// for each key (raw, and whether it has escapes: keyText decodes it) with
// the scanner positioned at the value, and must consume the value and
// return true, or return false to leave it to the default skip.
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

// keyText is a key as a callback of object got it, decoded when it has
// escapes.
func keyText(key []byte, escaped bool) []byte {
	if escaped {
		return decodedKey(key)
	}
	return key
}

func decodedKey(key []byte) []byte { return []byte(decodeEscaped(key)) }

// keyAt is where a key that str returned (a slice of p.s) starts, its
// quote included: computed from the slice, so the hot loop keeps nothing
// live for the policies that need it.
func (p *scanner) keyAt(key []byte) int { return cap(p.s) - cap(key) - 1 }
