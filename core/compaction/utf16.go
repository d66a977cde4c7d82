package compaction

import (
	"github.com/pith-dev/pith/core/session"
	"strings"
	"unicode/utf8"
)

func decodeRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }

// units is the JavaScript length of s (UTF-16 code units).
func units(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

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

// entryRole is the role of a message entry's message, "" for other entries.
// Kept in one place because it is on every hot loop of this package.
func entryRole(e *session.Entry) string { return e.Role() }
