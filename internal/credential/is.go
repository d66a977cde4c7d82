package credential

import (
	"strings"
	"unicode/utf8"
)

// Is reports whether value as a whole, outer space trimmed, looks like a
// credential: a known prefix then valueMin or more token bytes, an
// Authorization header's value, or a JWT.
//
// Any token byte (letter, digit, '_', '-') makes up the body here, not
// only the format's own: a whole value has no text around it a looser
// body could run into, and newer keys of an old prefix (sk-svcacct-…
// beside sk-'s plain letters and digits) are hidden all the same.
func Is(value string) bool {
	s := strings.TrimSpace(value)
	for _, f := range formats {
		if body, ok := strings.CutPrefix(s, f.prefix); ok && len(body) >= f.valueMin && all(body, alnumUnderDash) {
			return true
		}
	}
	return authorization(s) || jwt(s)
}

// space is white space as a header has it (and RE2's \s).
const space = " \t\n\f\r"

// authorization reports whether s is an Authorization header's value: a
// scheme that carries a credential (Bearer, Basic, GitHub's token), white
// space, then 8 or more characters with no white space.
func authorization(s string) bool {
	i := strings.IndexAny(s, space)
	if i < 0 {
		return false
	}
	switch scheme := s[:i]; {
	case strings.EqualFold(scheme, "bearer"), strings.EqualFold(scheme, "basic"), strings.EqualFold(scheme, "token"):
	default:
		return false
	}
	rest := strings.TrimLeft(s[i:], space)
	return utf8.RuneCountInString(rest) >= 8 && !strings.ContainsAny(rest, space)
}

// jwt reports whether s is a JSON Web Token: three base64url parts
// joined by '.', the header and payload of 10 or more bytes after the
// header's "eyJ" (base64 of `{"`, how every JWT header starts).
func jwt(s string) bool {
	header, rest, ok := strings.Cut(s, ".")
	if !ok || !strings.HasPrefix(header, "eyJ") || len(header) < len("eyJ")+10 {
		return false
	}
	payload, signature, ok := strings.Cut(rest, ".")
	return ok && len(payload) >= 10 && all(header, alnumUnderDash) && all(payload, alnumUnderDash) && all(signature, alnumUnderDash)
}

// all reports whether every byte of s is one of class.
func all(s string, class func(byte) bool) bool {
	for i := range len(s) {
		if !class(s[i]) {
			return false
		}
	}
	return true
}
