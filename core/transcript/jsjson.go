package transcript

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/jsondepth"
)

// This file renders JSON the way JavaScript's JSON.stringify(JSON.parse(x))
// does, which the tool-call lines of a serialized conversation must match
// (docs/behaviour.md §3, §6): keys in JS property order (array-index keys first, in
// numeric order, then insertion order; a repeated key keeps its first place
// and its last value), no whitespace, minimal string escapes, numbers in
// JS's shortest form. encoding/json gets every one of these wrong.

// jsValue is a parsed JSON value that remembers what JSON.stringify needs.
type jsValue struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'l' literal
	str  []uint16
	lit  string // number or literal text, already in output form
	keys []jsKey
	vals []*jsValue
}

type jsKey struct {
	units []uint16
	text  string // the key as a Go string, for lookups
}

type jsParser struct {
	s     string
	pos   int
	bad   bool
	depth int // arrays and objects open at pos
}

// parseJS parses raw JSON; ok is false when it is not valid JSON or nests
// deeper than jsondepth.Max (the parser and stringify recurse per level,
// so the limit is what keeps hostile input from overflowing the stack).
func parseJS(raw string) (*jsValue, bool) {
	p := &jsParser{s: raw}
	v := p.value()
	p.ws()
	if p.bad || p.pos != len(p.s) || v == nil {
		return nil, false
	}
	return v, true
}

func (p *jsParser) ws() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsParser) value() *jsValue {
	p.ws()
	if p.pos >= len(p.s) {
		p.bad = true
		return nil
	}
	switch c := p.s[p.pos]; {
	case (c == '{' || c == '[') && p.depth >= jsondepth.Max:
		p.bad = true
		return nil
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		u := p.str()
		return &jsValue{kind: 's', str: u}
	case c == 't' && strings.HasPrefix(p.s[p.pos:], "true"):
		p.pos += 4
		return &jsValue{kind: 'l', lit: "true"}
	case c == 'f' && strings.HasPrefix(p.s[p.pos:], "false"):
		p.pos += 5
		return &jsValue{kind: 'l', lit: "false"}
	case c == 'n' && strings.HasPrefix(p.s[p.pos:], "null"):
		p.pos += 4
		return &jsValue{kind: 'l', lit: "null"}
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.pos
		for p.pos < len(p.s) && strings.IndexByte("+-0123456789.eE", p.s[p.pos]) >= 0 {
			p.pos++
		}
		f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
		if err != nil && !isRangeErr(err) {
			p.bad = true
			return nil
		}
		return &jsValue{kind: 'n', lit: jsNumber(f)}
	}
	p.bad = true
	return nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (p *jsParser) array() *jsValue {
	p.depth++
	defer func() { p.depth-- }()
	v := &jsValue{kind: 'a'}
	p.pos++
	p.ws()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		return v
	}
	for !p.bad {
		v.vals = append(v.vals, p.value())
		p.ws()
		if p.pos >= len(p.s) {
			p.bad = true
			break
		}
		if p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.s[p.pos] == ']' {
			p.pos++
			return v
		}
		p.bad = true
	}
	return nil
}

func (p *jsParser) object() *jsValue {
	p.depth++
	defer func() { p.depth-- }()
	v := &jsValue{kind: 'o'}
	p.pos++
	p.ws()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return v
	}
	index := map[string]int{}
	for !p.bad {
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			p.bad = true
			break
		}
		ku := p.str()
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			p.bad = true
			break
		}
		p.pos++
		val := p.value()
		k := jsKey{units: ku, text: unitsString(ku)}
		if i, ok := index[k.text]; ok {
			v.vals[i] = val
		} else {
			index[k.text] = len(v.keys)
			v.keys = append(v.keys, k)
			v.vals = append(v.vals, val)
		}
		p.ws()
		if p.pos >= len(p.s) {
			p.bad = true
			break
		}
		if p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.s[p.pos] == '}' {
			p.pos++
			v.orderKeys()
			return v
		}
		p.bad = true
	}
	return nil
}

// orderKeys puts array-index keys first in numeric order, as JS objects
// enumerate them; the other keys keep insertion order.
func (v *jsValue) orderKeys() {
	type kv struct {
		k   jsKey
		v   *jsValue
		idx int64
	}
	items := make([]kv, len(v.keys))
	anyIndex := false
	for i := range v.keys {
		items[i] = kv{v.keys[i], v.vals[i], arrayIndex(v.keys[i].text)}
		anyIndex = anyIndex || items[i].idx >= 0
	}
	if !anyIndex {
		return
	}
	slices.SortStableFunc(items, func(a, b kv) int {
		switch {
		case a.idx >= 0 && b.idx >= 0:
			return int(a.idx - b.idx)
		case a.idx >= 0:
			return -1
		case b.idx >= 0:
			return 1
		}
		return 0
	})
	for i := range items {
		v.keys[i], v.vals[i] = items[i].k, items[i].v
	}
}

// arrayIndex returns the value of a canonical array-index key
// ("0".."4294967294"), or -1.
func arrayIndex(k string) int64 {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return -1
	}
	var n int64
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return -1
		}
		n = n*10 + int64(k[i]-'0')
	}
	if n > 4294967294 {
		return -1
	}
	return n
}

// str reads a string literal into UTF-16 units, keeping lone surrogates.
func (p *jsParser) str() []uint16 {
	p.pos++ // opening quote
	var u []uint16
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			return u
		case c == '\\':
			if p.pos+1 >= len(p.s) {
				p.bad = true
				return u
			}
			e := p.s[p.pos+1]
			p.pos += 2
			switch e {
			case 'b':
				u = append(u, '\b')
			case 'f':
				u = append(u, '\f')
			case 'n':
				u = append(u, '\n')
			case 'r':
				u = append(u, '\r')
			case 't':
				u = append(u, '\t')
			case 'u':
				if p.pos+4 > len(p.s) {
					p.bad = true
					return u
				}
				n, err := strconv.ParseUint(p.s[p.pos:p.pos+4], 16, 16)
				if err != nil {
					p.bad = true
					return u
				}
				u = append(u, uint16(n))
				p.pos += 4
			default:
				u = append(u, uint16(e))
			}
		case c < utf8.RuneSelf:
			u = append(u, uint16(c))
			p.pos++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.pos:])
			u = utf16.AppendRune(u, r)
			p.pos += size
		}
	}
	p.bad = true
	return u
}

// unitsString converts UTF-16 units to a Go string; a lone surrogate
// becomes U+FFFD, as it does when JavaScript text is encoded as UTF-8.
func unitsString(u []uint16) string {
	return string(utf16.Decode(u))
}

// stringify writes v as JSON.stringify would.
func (v *jsValue) stringify(b *strings.Builder) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSString(b, k.units)
			b.WriteByte(':')
			v.vals[i].stringify(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range v.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			e.stringify(b)
		}
		b.WriteByte(']')
	case 's':
		writeJSString(b, v.str)
	default:
		b.WriteString(v.lit)
	}
}

const hexDigits = "0123456789abcdef"

// writeJSString writes a string literal with JSON.stringify's escapes: only
// quote, backslash and control characters; a lone surrogate as \udxxx.
func writeJSString(b *strings.Builder, u []uint16) {
	b.WriteByte('"')
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		case c >= 0xD800 && c <= 0xDBFF && i+1 < len(u) && u[i+1] >= 0xDC00 && u[i+1] <= 0xDFFF:
			b.WriteRune(utf16.DecodeRune(rune(c), rune(u[i+1])))
			i++
		case c >= 0xD800 && c <= 0xDFFF:
			b.WriteString(`\u`)
			for s := 12; s >= 0; s -= 4 {
				b.WriteByte(hexDigits[(c>>s)&15])
			}
		default:
			b.WriteRune(rune(c))
		}
	}
	b.WriteByte('"')
}

// jsNumber formats f as JavaScript's Number#toString (and so JSON.stringify)
// does: shortest round-trip digits, plain notation for 1e-6 <= |f| < 1e21,
// exponent notation with an explicit sign otherwise; non-finite → null.
func jsNumber(f float64) string {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return "null"
	case f == 0:
		return "0"
	}
	a := math.Abs(f)
	if a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.IndexByte(s, 'e')
	mant, exp := s[:i], s[i+1:]
	sign := exp[0]
	digits := strings.TrimLeft(exp[1:], "0")
	if digits == "" {
		digits = "0"
	}
	return mant + "e" + string(sign) + digits
}
