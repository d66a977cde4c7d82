package tokens

import (
	"encoding/binary"
	"unicode/utf8"
)

// jsonStringUnits returns the UTF-16 length of the decoded value of a JSON
// string literal given with its quotes, and the same length re-escaped the
// way JSON.stringify escapes (quotes included).
func jsonStringUnits(lit string) (decoded, stringified int) {
	if len(lit) < 2 {
		return 0, 2
	}
	s := lit[1 : len(lit)-1]
	stringified = 2
	for i := 0; i < len(s); {
		// A run of printable ASCII counts one unit a byte both ways:
		// eight bytes at a time (tool-call arguments carry whole files).
		if i+8 <= len(s) && plainASCII(binary.LittleEndian.Uint64(unsafeBytes(s[i:i+8]))) {
			i += 8
			decoded += 8
			stringified += 8
			continue
		}
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			e := s[i+1]
			if e == 'u' && i+5 < len(s) {
				u := hex4(s[i+2 : i+6])
				i += 6
				decoded++
				switch {
				case u >= 0xD800 && u <= 0xDBFF && i+5 < len(s) && s[i] == '\\' && s[i+1] == 'u' && isLow(hex4(s[i+2:i+6])):
					// A surrogate pair written as two escapes: two units
					// either way, printed raw by JSON.stringify.
					i += 6
					decoded++
					stringified += 2
				case u >= 0xD800 && u <= 0xDFFF:
					stringified += 6 // a lone surrogate is printed as \uXXXX
				default:
					stringified += escapedLen(rune(u))
				}
				continue
			}
			i += 2
			decoded++
			switch e {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				stringified += 2
			default: // '/' and anything lenient: printed as the plain char
				stringified++
			}
		case c < utf8.RuneSelf:
			i++
			decoded++
			stringified += escapedLen(rune(c))
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			n := 1
			if r >= 0x10000 {
				n = 2
			}
			decoded += n
			stringified += n
		}
	}
	return decoded, stringified
}

// plainASCII reports whether every byte of x is printable ASCII other
// than '"' and '\\': a byte JSON.stringify prints as it is. A borrow only
// adds false hits above a true one, so the answer is exact.
func plainASCII(x uint64) bool {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((x-ones*0x20)|(q-ones)&^q|(b-ones)&^b|x)&highs == 0
}

// escapedLen is the length JSON.stringify prints for a BMP character.
func escapedLen(r rune) int {
	switch r {
	case '"', '\\', '\b', '\f', '\n', '\r', '\t':
		return 2
	}
	if r < 0x20 {
		return 6
	}
	return 1
}

func isLow(u int) bool { return u >= 0xDC00 && u <= 0xDFFF }

func hex4(s string) int {
	v := 0
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return v
}

// Units returns the UTF-16 length of a Go string, as JavaScript's
// String.prototype.length would.
func Units(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
