package jsondepth

import (
	"errors"
	"strconv"
)

// Max is the deepest nesting accepted: the number of arrays and objects
// open at once. `1` has depth 0, `[]` and `{}` depth 1, `[{}]` depth 2.
// A line nested deeper is malformed; a call with such an argument is
// refused.
const Max = 10_000

// ErrTooDeep reports JSON nested deeper than Max.
var ErrTooDeep = errors.New("JSON nested deeper than " + strconv.Itoa(Max) + " levels")

// Check reports ErrTooDeep when raw opens more than Max arrays and objects
// at once. It does not otherwise validate raw: it only counts brackets
// outside strings, without recursion, so it is safe on any input.
func Check(raw []byte) error {
	if Exceeds(raw, Max) {
		return ErrTooDeep
	}
	return nil
}

// Exceeds reports whether raw opens more than max arrays and objects at
// once, counted as Check counts them; callers with a tighter limit than Max
// (a plugin's jsonDepth) use it directly.
func Exceeds(raw []byte, max int) bool {
	depth := 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			// Skip the string; an escaped quote does not end it.
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			if depth > max {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}
