package tokens

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/pith-dev/pith/core/jsondepth"
)

// StringifiedLen returns the UTF-16 length of JSON.stringify(JSON.parse(raw))
// for a valid JSON value (docs/behaviour.md §3): keys in file order with duplicates
// collapsed (the last value wins), no whitespace, strings re-escaped the
// JavaScript way and numbers in JavaScript's shortest form. It does not
// build the string. Invalid JSON gives a best-effort length, and so does
// JSON nested deeper than jsondepth.Max: the part past the limit counts its
// raw length, walked without recursion, so no input can overflow the stack.
func StringifiedLen(raw []byte) int {
	p := jsParser{s: unsafeString(raw)}
	p.ws()
	return p.value()
}

type jsParser struct {
	s     string
	i     int
	depth int // arrays and objects open at p.i
}

func (p *jsParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsParser) value() int {
	if p.i >= len(p.s) {
		return 0
	}
	switch c := p.s[p.i]; {
	case (c == '{' || c == '[') && p.depth >= jsondepth.Max:
		return p.skipDeep()
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		_, n := jsonStringUnits(p.stringLit())
		return n
	case c == 't':
		p.i += 4
		return 4
	case c == 'f':
		p.i += 5
		return 5
	case c == 'n':
		p.i += 4
		return 4
	default:
		return p.number()
	}
}

// StringLiteralUnits is, for a JSON string literal given with its quotes,
// the UTF-16 length of its decoded text and the length JSON.stringify
// prints for that text, quotes included.
func StringLiteralUnits(lit []byte) (decoded, stringified int) {
	return jsonStringUnits(unsafeString(lit))
}

// NumberLen is the length JavaScript prints for a valid JSON number
// literal (see jsNumberLen).
func NumberLen(lit []byte) int { return jsNumberLen(unsafeString(lit)) }

// stringLit returns the next string literal, quotes included.
func (p *jsParser) stringLit() string {
	start := p.i
	p.i++
	for p.i < len(p.s) {
		for p.i+8 <= len(p.s) && !hasQuoteOrBackslash(binary.LittleEndian.Uint64(unsafeBytes(p.s[p.i:p.i+8]))) {
			p.i += 8
		}
		if p.i >= len(p.s) {
			break
		}
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			return p.s[start:p.i]
		}
		p.i++
	}
	return p.s[start:]
}

func (p *jsParser) number() int {
	start := p.i
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			p.i++
			continue
		}
		break
	}
	if p.i == start { // not a value at all; skip a byte to make progress
		p.i++
		return 0
	}
	return jsNumberLen(p.s[start:p.i])
}

// skipDeep skips an array or object past the nesting limit with a flat
// bracket count and returns its raw length, a best effort for input that
// is malformed anyway.
func (p *jsParser) skipDeep() int {
	start, open := p.i, 0
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '"':
			p.stringLit()
			continue
		case '[', '{':
			open++
		case ']', '}':
			open--
		}
		p.i++
		if open == 0 {
			break
		}
	}
	return p.i - start
}

func (p *jsParser) array() int {
	p.i++ // [
	p.depth++
	n, count := 2, 0
	for {
		p.ws()
		if p.i >= len(p.s) {
			p.depth--
			return n
		}
		if p.s[p.i] == ']' {
			p.i++
			p.depth--
			return n
		}
		if p.s[p.i] == ',' {
			p.i++
			continue
		}
		if count > 0 {
			n++ // the comma
		}
		n += p.value()
		count++
	}
}

// Member is one member of an object as JSON.stringify prints it: the
// key's literal (quotes included, as the source has it), whether it has
// escapes, and the printed lengths of the key and of the value.
type Member struct {
	key     string
	escaped bool
	klen    int
	vlen    int
}

// AddMember adds to members the member with key literal keyLit (quotes
// included) whose value prints vlen units. A key met before keeps its
// place and takes the new value, as JSON.parse keeps them. A caller that
// walks an object itself (the session scanner, which validates it on the
// way) measures it with AddMember and ObjectLen, as StringifiedLen does.
func AddMember(members []Member, keyLit string, vlen int) []Member {
	escaped := hasBackslash(keyLit)
	for j := range members {
		m := &members[j]
		// Two keys without escapes are the same key only when they are
		// the same bytes: decoding is for the rare escaped ones.
		if m.key == keyLit || (m.escaped || escaped) && sameKey(m.key, keyLit) {
			m.vlen = vlen // JSON.parse keeps the first position, the last value
			return members
		}
	}
	_, klen := jsonStringUnits(keyLit)
	return append(members, Member{keyLit, escaped, klen, vlen})
}

// ObjectLen is the printed length of an object of members.
func ObjectLen(members []Member) int {
	n := 2
	for j, m := range members {
		if j > 0 {
			n++
		}
		n += m.klen + 1 + m.vlen
	}
	return n
}

func (p *jsParser) object() int {
	p.i++ // {
	p.depth++
	var small [8]Member
	members := small[:0]
	for {
		p.ws()
		if p.i >= len(p.s) {
			break
		}
		c := p.s[p.i]
		if c == '}' {
			p.i++
			break
		}
		if c == ',' {
			p.i++
			continue
		}
		if c != '"' {
			p.i++
			continue
		}
		lit := p.stringLit()
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ':' {
			p.i++
		}
		p.ws()
		members = AddMember(members, lit, p.value())
	}
	p.depth--
	return ObjectLen(members)
}

// sameKey compares two key literals by their decoded value.
func sameKey(a, b string) bool {
	if a == b {
		return true
	}
	if !hasBackslash(a) && !hasBackslash(b) {
		return false
	}
	ua, e1 := strconv.Unquote(a)
	ub, e2 := strconv.Unquote(b)
	return e1 == nil && e2 == nil && ua == ub
}

func hasBackslash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			return true
		}
	}
	return false
}

// jsNumberLen is the length of a JSON number literal as JavaScript's
// Number.prototype.toString prints the parsed value (ECMA-262
// Number::toString): shortest round-trip digits, plain notation for
// exponents from -6 to 20, exponential otherwise; -0 prints as 0 and an
// overflow to Infinity makes JSON.stringify print null.
func jsNumberLen(lit string) int {
	if n, ok := plainIntegerLen(lit); ok {
		return n
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !math.IsInf(f, 0) {
		return len(lit)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 4 // null
	}
	if f == 0 {
		return 1
	}
	sign := 0
	if f < 0 {
		sign = 1
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d.ddde±XX
	k := 0
	expAt := 0
	for i, c := range e {
		if c == 'e' {
			expAt = i
			break
		}
		if c >= '0' && c <= '9' {
			k++
		}
	}
	exp, _ := strconv.Atoi(string(e[expAt+1:]))
	n := exp + 1 // value = 0.d1d2…dk × 10^n
	switch {
	case k <= n && n <= 21:
		return sign + n
	case 0 < n && n <= 21:
		return sign + k + 1
	case -6 < n && n <= 0:
		return sign + 2 - n + k
	default:
		l := sign + k + 2 // digits, 'e', the exponent's sign
		if k > 1 {
			l++ // the decimal point
		}
		return l + len(strconv.Itoa(abs(n-1)))
	}
}

// plainIntegerLen is the printed length of an integer literal of at most
// 15 digits without a leading zero: exact in a float64 and printed as
// written, so its length is the literal's (-0 prints as 0). ok is false
// for any other literal. Tool arguments are full of such numbers (line
// offsets, limits), and parsing and formatting each as a float is most
// of what measuring one costs.
func plainIntegerLen(lit string) (n int, ok bool) {
	digits := lit
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && len(digits) > 1 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	if digits == "0" {
		return 1, true
	}
	return len(lit), true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
