package main

import (
	"bytes"
	"strings"
)

// The prefilters: each rule's literals (rule.need) are a cheap test every
// match of its regexp passes (FuzzMayMatch), used twice — on each string
// before running the regexp (mayMatch), and on a whole message's raw JSON
// before decoding it at all (mayHoldSecret).

// mayMatch reports whether s holds one literal of each group of ru.need.
// When it is false the regexp cannot match s.
func (ru *rule) mayMatch(s string) bool {
	for _, group := range ru.need {
		found := false
		for _, lit := range group {
			if ru.fold && containsFold(s, lit) || !ru.fold && strings.Contains(s, lit) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// containsFold reports whether s holds the lower-case ASCII word lit in
// any letter case. It jumps between the occurrences of lit's first letter
// in either case, so it runs at the speed of IndexByte on text without it.
func containsFold(s, lit string) bool {
	lower, upper := lit[0], lit[0]&^0x20
	for i := 0; i+len(lit) <= len(s); {
		j := indexEither(s[i:len(s)-len(lit)+1], lower, upper)
		if j < 0 {
			return false
		}
		i += j
		if equalFoldASCII(s[i:i+len(lit)], lit) {
			return true
		}
		i++
	}
	return false
}

// indexEither is the index of the first a or b in s, or -1.
func indexEither(s string, a, b byte) int {
	i := strings.IndexByte(s, a)
	if i < 0 {
		i = len(s)
	}
	if j := strings.IndexByte(s[:i], b); j >= 0 {
		return j
	}
	if i == len(s) {
		return -1
	}
	return i
}

// equalFoldASCII: s is the lower-case word lit in any letter case.
func equalFoldASCII(s, lit string) bool {
	for j := 0; j < len(lit); j++ {
		if s[j]|0x20 != lit[j] {
			return false
		}
	}
	return true
}

// literalBytes are the bytes a prefilter compares against: every byte of a
// literal and, for a fold rule, every byte that matches one in some case.
var literalBytes = func() (set [256]bool) {
	for _, ru := range rules {
		for _, group := range ru.need {
			for _, lit := range group {
				for i := 0; i < len(lit); i++ {
					for c := range 256 {
						if byte(c) == lit[i] || ru.fold && byte(c)|0x20 == lit[i] {
							set[c] = true
						}
					}
				}
			}
		}
	}
	return set
}()

// mayHoldSecret reports whether some string of the raw JSON message could
// hold a match of some rule, judged on the raw bytes without decoding.
//
// When it is false the full redaction (redactor.json) would replace and
// count nothing in the message; its output would only be the message
// re-encoded, which the prompt builder reads the same as the message
// itself (decodeMessage, canonicalValue). The rule that makes the raw
// bytes trustworthy: a decoded string is its raw bytes except where an
// escape sequence stands for a character. If no escape in the message
// stands for a byte of some literal (hidesLiteral: "\u0073k-" is "sk-",
// "https:\/\/" holds "://"), every occurrence of a literal in a decoded
// string — key or value — is spelled by the same bytes in the raw message
// (invalid UTF-8 decodes to U+FFFD, which no ASCII literal holds). So a
// literal absent from the raw bytes is absent from every string, and
// every prefilter, hence every regexp, fails on every string — however the
// bytes are read, so even a message that is not valid JSON has no secret
// in it: the prompt builder, which decodes it anyway, fails or reads it
// as the full path does (decodeMessage).
//
// FuzzFastPath checks it against the full redaction.
func mayHoldSecret(raw []byte) bool {
	s := string(raw)
	for i := range rules {
		if rules[i].mayMatch(s) {
			return true
		}
	}
	return hidesLiteral(raw)
}

// shortEscapes are what JSON's two-character escapes stand for.
var shortEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hidesLiteral reports whether raw holds an escape sequence that stands
// for a byte of some literal, or one it cannot read (invalid JSON, which
// the full path judges).
func hidesLiteral(raw []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		if i+1 >= len(raw) {
			return true
		}
		c := raw[i+1]
		if c != 'u' {
			if shortEscapes[c] == 0 || literalBytes[shortEscapes[c]] {
				return true
			}
			i += 2
			continue
		}
		if i+6 > len(raw) {
			return true
		}
		r, ok := hex4(raw[i+2 : i+6])
		if !ok || r < 0x80 && literalBytes[r] {
			return true
		}
		i += 6
	}
}

// hex4 reads four hexadecimal digits.
func hex4(h []byte) (rune, bool) {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
