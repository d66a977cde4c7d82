package sessiongen

import (
	"strconv"
	"unicode/utf8"
)

// escStyle selects how a string is written into the JSON line.
type escStyle uint8

const (
	// escJS writes strings the way JavaScript's JSON.stringify does, which is
	// what pi writes: only '"', '\\' and control characters are escaped.
	escJS escStyle = iota
	// escASCII writes every non-ASCII character as a \uXXXX escape
	// (surrogate pairs for the astral planes), '/' as "\/" and '<', '>', '&'
	// as \u003c-style escapes, like other JSON writers do. A reader must
	// decode these to the same string as the escJS form.
	escASCII
)

const hexDigits = "0123456789abcdef"

// safe[style][c] reports whether byte c is copied through unchanged.
var safe = func() (t [2][256]bool) {
	for c := 0x20; c < 256; c++ {
		t[escJS][c] = c != '"' && c != '\\'
		t[escASCII][c] = c < utf8.RuneSelf && c != '"' && c != '\\' && c != '/' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// shortEscape is the two-character escape of a byte that has one ('"' for
// '"', 'n' for a newline, …), or 0. '/' has one too, used only where safe
// says so (escASCII).
var shortEscape = [256]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't', '\b': 'b', '\f': 'f', '/': '/'}

// appendString appends s as a JSON string literal in the given style.
func appendString(b []byte, s string, style escStyle) []byte {
	tab := &safe[style]
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if tab[c] {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch {
		case shortEscape[c] != 0:
			b = append(b, '\\', shortEscape[c])
			i++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			b = appendU(b, rune(c))
			i++
		default: // non-ASCII in escASCII style
			r, size := utf8.DecodeRuneInString(s[i:])
			if r >= 0x10000 {
				r -= 0x10000
				b = appendU(b, 0xD800+(r>>10))
				b = appendU(b, 0xDC00+(r&0x3FF))
			} else {
				b = appendU(b, r)
			}
			i += size
		}
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[(r>>12)&0xF], hexDigits[(r>>8)&0xF], hexDigits[(r>>4)&0xF], hexDigits[r&0xF])
}

// obj is a tiny streaming writer for one JSON object with keys in the order
// they are written (pi writes keys in insertion order, never sorted).
type obj struct {
	b     []byte
	first []bool
	style escStyle
}

func (o *obj) open() {
	o.b = append(o.b, '{')
	o.first = append(o.first, true)
}

func (o *obj) openArr() {
	o.b = append(o.b, '[')
	o.first = append(o.first, true)
}

func (o *obj) close() {
	o.b = append(o.b, '}')
	o.first = o.first[:len(o.first)-1]
}

func (o *obj) closeArr() {
	o.b = append(o.b, ']')
	o.first = o.first[:len(o.first)-1]
}

// sep writes the comma before a member/element unless it is the first.
func (o *obj) sep() {
	top := len(o.first) - 1
	if o.first[top] {
		o.first[top] = false
		return
	}
	o.b = append(o.b, ',')
}

func (o *obj) key(k string) {
	o.sep()
	o.b = appendString(o.b, k, o.style)
	o.b = append(o.b, ':')
}

func (o *obj) str(k, v string) {
	o.key(k)
	o.b = appendString(o.b, v, o.style)
}

func (o *obj) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *obj) float(k string, v float64) {
	o.key(k)
	o.b = appendFloat(o.b, v)
}

func (o *obj) bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *obj) null(k string) {
	o.key(k)
	o.b = append(o.b, "null"...)
}

// raw writes a member whose value is a literal JSON token (a number written
// as "1.0" or "1e2", for instance).
func (o *obj) raw(k, token string) {
	o.key(k)
	o.b = append(o.b, token...)
}

func (o *obj) objKey(k string) {
	o.key(k)
	o.open()
}

func (o *obj) arrKey(k string) {
	o.key(k)
	o.openArr()
}

// elem* write array elements.
func (o *obj) elemStr(v string) {
	o.sep()
	o.b = appendString(o.b, v, o.style)
}

func (o *obj) elemRaw(token string) {
	o.sep()
	o.b = append(o.b, token...)
}

func (o *obj) elemObj() {
	o.sep()
	o.open()
}

// appendFloat writes a cost-like float the way JavaScript prints it for the
// magnitudes the generator uses (shortest round-trip, no exponent).
func appendFloat(b []byte, v float64) []byte {
	if v == float64(int64(v)) {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}
