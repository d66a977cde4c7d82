package transcript

import (
	"strings"
	"unicode/utf8"
)

// clipUnits returns the first max UTF-16 units of s. When the cut falls
// inside a surrogate pair, JavaScript keeps a lone high surrogate, which
// becomes U+FFFD once the text is encoded as UTF-8; clipUnits writes that
// U+FFFD too so the text matches the reference byte for byte.
func clipUnits(s string, max int) string {
	n := 0
	for i := 0; i < len(s); {
		if n >= max {
			return s[:i]
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > max {
			var b strings.Builder
			b.WriteString(s[:i])
			b.WriteRune(utf8.RuneError)
			return b.String()
		}
		n += w
		i += size
	}
	return s
}
