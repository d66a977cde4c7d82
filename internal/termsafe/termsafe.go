// Package termsafe makes text that came from a session file or a plugin
// safe to print on a terminal. Such text is not the user's: an entry's
// content, a label, an id or a plugin's log message can hold escape
// sequences (ESC [ … moves the cursor, clears the screen, sets the window
// title, writes to the clipboard), a NUL, a carriage return that overwrites
// what was printed, or Unicode bidi overrides and invisible characters that
// make text read as something else. It is the one escaper of the CLI's
// human-readable output and of relayed plugin logs; JSON output needs none
// (encoding/json escapes control characters itself).
package termsafe

import (
	"io"
	"unicode"
	"unicode/utf8"
)

// Text returns s with every character a terminal could act on, or that
// could disguise text, written as a Go-style escape (\x1b, \u202e, and
// \xNN for a byte that is not UTF-8); printable Unicode, tabs and newlines
// are kept. For multi-line text whose line breaks are the output's own (a
// summary, a message to edit). Text that needs no escaping is returned as
// it is, without allocating.
func Text(s string) string { return escape(s, true) }

// Line is Text with newlines escaped too: a value printed on one line (an
// id, a label, a preview, a log message) stays on that line, so it cannot
// forge the lines that follow.
func Line(s string) string { return escape(s, false) }

func escape(s string, keepNewline bool) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiUnsafe(c, keepNewline) {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, size, keepNewline) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	return string(appendEscaped(append(make([]byte, 0, len(s)+16), s[:i]...), s[i:], keepNewline))
}

// asciiUnsafe is unsafe for a one-byte character, the common case.
func asciiUnsafe(c byte, keepNewline bool) bool {
	return c < 0x20 && c != '\t' && (c != '\n' || !keepNewline) || c == 0x7f
}

// appendEscaped appends s to dst, escaped as Text (keepNewline) or Line.
func appendEscaped(dst []byte, s string, keepNewline bool) []byte {
	for len(s) > 0 {
		if c := s[0]; c < utf8.RuneSelf && !asciiUnsafe(c, keepNewline) {
			dst = append(dst, c)
			s = s[1:]
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case !unsafe(r, size, keepNewline):
			dst = append(dst, s[:size]...)
		case r == utf8.RuneError && size <= 1:
			dst = append(dst, `\x`...)
			dst = appendHex(dst, uint32(s[0]), 2)
		case r < 0x80:
			dst = append(dst, `\x`...)
			dst = appendHex(dst, uint32(r), 2)
		case r <= 0xffff:
			dst = append(dst, `\u`...)
			dst = appendHex(dst, uint32(r), 4)
		default:
			dst = append(dst, `\U`...)
			dst = appendHex(dst, uint32(r), 8)
		}
		s = s[size:]
	}
	return dst
}

const hexDigits = "0123456789abcdef"

func appendHex(dst []byte, v uint32, digits int) []byte {
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		dst = append(dst, hexDigits[v>>uint(shift)&0xf])
	}
	return dst
}

// unsafe reports whether the rune r (size bytes of input) must be escaped.
func unsafe(r rune, size int, keepNewline bool) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return true // not UTF-8: a lone 0x9b is CSI to some terminals
	case r == '\t':
		return false
	case r == '\n':
		return !keepNewline
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true // C0, DEL, C1
	case r < 0x80:
		return false
	case r == 0x200c, r == 0x200d:
		// Zero-width (non-)joiners are part of how several scripts and
		// emoji sequences are written; they move nothing.
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		// Format characters: bidi embeddings, overrides and isolates
		// (U+202A–U+202E, U+2066–U+2069) reorder what follows, and the
		// invisible ones (U+200B, U+2060, U+FEFF, tags) hide in plain
		// sight; line and paragraph separators break lines.
		return true
	case !unicode.IsPrint(r) && !unicode.IsSpace(r):
		return true // unassigned, private use, surrogates' replacement
	}
	return false
}

// Writer escapes, as Text, everything written through it. It is for a
// logger's output, so that a message logged from plugin or session text
// cannot reach the terminal raw, whoever logged it; newlines are kept
// because the logger's own format (hclog's multi-line values) uses them,
// and a message's own newlines are escaped where it is relayed
// (pluginhost). hclog writes one whole line per Write; a write that ends
// inside a UTF-8 sequence has its last bytes escaped as \xNN.
type Writer struct{ w io.Writer }

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

func (t *Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
