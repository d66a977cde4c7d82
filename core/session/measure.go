package session

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/tokens"
)

// Measuring a message while its line is scanned: the parts tokens.Chars
// reads (tokens.MessageParts), taken from the values the scanner passes
// anyway, so an opened session knows every message's estimate without a
// second walk over its bytes. Calibration sums the estimates of nearly
// every message of a compaction's range; measured here, in the parallel
// parse and on bytes still in cache, that sum is a loop over integers.
// What the scanner does not measure (content given as an object) is left
// to Entry.MessageTokens, which then estimates the message on first use.

// messageMeasure is the measure of one message object in progress.
type messageMeasure struct {
	parts tokens.MessageParts
	keys  seenKeys
	// unmeasured: no estimate is recorded for the line.
	unmeasured bool
}

// seenKeys records which keys of an object were met: tokens.Chars counts
// the first value of a key, where JSON.parse keeps the last.
type seenKeys uint8

const (
	seenRole seenKeys = 1 << iota
	seenContent
	seenCommand
	seenOutput
	seenSummary
)

// The keys of a content block (a set of their own).
const (
	seenType seenKeys = 1 << iota
	seenText
	seenThinking
	seenName
	seenArguments
)

// add marks k and reports whether it was already marked.
func (s *seenKeys) add(k seenKeys) (already bool) {
	already = *s&k != 0
	*s |= k
	return already
}

// seen marks the message key k and reports whether it was met before.
func (m *messageMeasure) seen(k seenKeys) bool { return m.keys.add(k) }

// measure reads the value at the scanner as the key k's: the units of the
// first value when it is a string, into units. It reports whether it
// consumed the value (otherwise the object skips it).
func (m *messageMeasure) measure(p *scanner, k seenKeys, units *int) bool {
	if m.seen(k) || p.i >= len(p.s) || p.s[p.i] != '"' {
		return false
	}
	*units, _ = p.stringUnits()
	return true
}

// stringUnits scans the string at p.i as str does and returns the UTF-16
// length of its decoded text, and the length JSON.stringify prints for it,
// quotes included (both 0 when it is malformed: the line is then refused).
// The strings it measures (tool outputs, texts, tool-call arguments) are
// most of a session's bytes, so it counts in the scan instead of walking
// them again: a byte of a plain run is a unit unless it continues a UTF-8
// sequence, a four-byte sequence is two (a surrogate pair), an escape is
// one. A plain run prints as it is; an escape prints as its character
// does (escapePrinted). Invalid UTF-8, whose bytes count one unit each,
// is measured again by tokens.StringLiteralUnits, which decodes it.
func (p *scanner) stringUnits() (units, printed int) {
	start := p.i + 1
	i := start
	s := p.s
	// less is the bytes that are not units of their own: the rest of each
	// escape and each UTF-8 continuation byte, less one per four-byte
	// sequence.
	less := 0
	// more is what escapes print beyond their one unit each.
	more := 0
	// The words are checked as UTF-8 as they go (utf8Word); unsure (a
	// few bytes at the end of the buffer) sends the string to
	// utf8.Valid.
	unsure := false
	for {
		// carry is the continuation bytes the last word still expects,
		// prev its last byte: a special character between words (an
		// escape) is ASCII, so neither carries over it.
		var carry, prev uint64
		for i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(s[i:])
			m := specialMask(x)
			if m != 0 {
				// Only the bytes before the special one are the string's:
				// a sequence they leave open fails at the zeroed rest.
				if x &= (m&-m)>>7 - 1; x&highs != 0 || carry != 0 {
					less += utf8Less(x)
					if carry, _ = utf8Word(x, carry, prev); carry == badUTF8 {
						return p.invalidUTF8(start)
					}
				}
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			if x&highs != 0 || carry != 0 {
				less += utf8Less(x)
				if carry, prev = utf8Word(x, carry, prev); carry == badUTF8 {
					return p.invalidUTF8(start)
				}
			} else {
				prev = 0
			}
			i += 8
		}
		if i+8 > len(s) {
			if carry != 0 {
				unsure = true
			}
			for i < len(s) && !strSpecial[s[i]] {
				if s[i] >= 0x80 {
					less += utf8Less(uint64(s[i]))
					unsure = true
				}
				i++
			}
		}
		if i >= len(s) {
			p.fail("unterminated string")
			return 0, 0
		}
		switch c := s[i]; {
		case c == '"':
			p.i = i + 1
			if unsure && !utf8.Valid(s[start:i]) {
				return tokens.StringLiteralUnits(s[start-1 : i+1])
			}
			units = i - start - less
			return units, units + more + 2
		case c == '\\':
			if i+1 < len(s) {
				switch s[i+1] {
				case '"', '\\', 'b', 'f', 'n', 'r', 't':
					i += 2
					less++
					more++ // printed escaped again
					continue
				case '/':
					i += 2
					less++
					continue
				case 'u':
					if i+5 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
						u := hex4(s[i+2:])
						if isHighSurrogate(u) && i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' && isLowSurrogate(hex4Checked(s[i+8:])) {
							// A surrogate pair: two units, printed as
							// the character.
							i += 12
							less += 10
							continue
						}
						i += 6
						less += 5
						more += escapePrinted(u) - 1
						continue
					}
				}
			}
			p.fail("invalid escape in a string")
			return 0, 0
		default:
			p.fail("control character in a string")
			return 0, 0
		}
	}
}

// escapePrinted is how long JSON.stringify prints the UTF-16 unit u that
// a \u escape gave: a lone surrogate as the escape, the controls it
// names (\n, \") as two characters, other controls as \u00XX, anything
// else as the character.
func escapePrinted(u int) int {
	switch {
	case u >= 0xD800 && u <= 0xDFFF:
		return 6
	case u == '"' || u == '\\' || u == '\b' || u == '\f' || u == '\n' || u == '\r' || u == '\t':
		return 2
	case u < 0x20:
		return 6
	}
	return 1
}

func isHighSurrogate(u int) bool { return u >= 0xD800 && u <= 0xDBFF }
func isLowSurrogate(u int) bool  { return u >= 0xDC00 && u <= 0xDFFF }

// hex4 is the value of four hex digits the caller has checked.
func hex4(s []byte) int {
	return hexDigit(s[0])<<12 | hexDigit(s[1])<<8 | hexDigit(s[2])<<4 | hexDigit(s[3])
}

// hex4Checked is hex4 of four bytes that may not be hex digits: -1 then.
func hex4Checked(s []byte) int {
	if !isHex(s[0]) || !isHex(s[1]) || !isHex(s[2]) || !isHex(s[3]) {
		return -1
	}
	return hex4(s)
}

func hexDigit(c byte) int {
	switch {
	case c <= '9':
		return int(c - '0')
	case c >= 'a':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// invalidUTF8 measures the string at start, whose UTF-8 utf8Word
// refused: it scans to the string's end as str does (failing where it
// would) and decodes it as tokens.StringUnits does, each bad byte a unit.
func (p *scanner) invalidUTF8(start int) (units, printed int) {
	p.i = start - 1
	p.str()
	if p.err != "" {
		return 0, 0
	}
	return tokens.StringLiteralUnits(p.s[start-1 : p.i])
}

// utf8Less is, for the bytes of x (UTF-8 in the lanes it has), the
// continuation bytes (10xxxxxx) less the four-byte leaders (11110xxx):
// in valid UTF-8, bytes minus that is UTF-16 units.
func utf8Less(x uint64) int {
	cont := x &^ (x << 1) & highs
	lead4 := x & (x << 1) & (x << 2) & (x << 3) &^ (x << 4) & highs
	return bits.OnesCount64(cont) - bits.OnesCount64(lead4)
}

// stringUnitsAt is the units of the value s[start:end] the scanner has
// passed: its decoded length when it is a string, else 0.
func stringUnitsAt(s []byte, start, end int) int {
	if end-start < 2 || s[start] != '"' {
		return 0
	}
	return tokens.StringUnits(s[start+1 : end-1])
}

// badUTF8 is utf8Word's answer for a word that is not UTF-8: no carry
// can be all ones.
const badUTF8 = ^uint64(0)

// utf8Word checks the bytes of x as UTF-8 (RFC 3629) eight at a time,
// as utf8.Valid would over the run they are part of: carry marks the
// lanes the word before still expects as continuation bytes and prev is
// its last byte. It returns the carry and last byte for the next word,
// or badUTF8. Every continuation byte (10xxxxxx) must be one a leader
// expects, and no byte one expects may be anything else; C0, C1 and
// F5..FF never occur; and the second byte after E0 (overlong), ED
// (surrogate), F0 (overlong) and F4 (above U+10FFFF) is narrowed.
func utf8Word(x, carry, prev uint64) (uint64, uint64) {
	lead := x & (x << 1) & highs  // 11xxxxxx
	cont := x &^ (x << 1) & highs // 10xxxxxx
	lead3 := lead & (x << 2)      // 111xxxxx
	lead4 := lead3 & (x << 3)     // 1111xxxx
	if carry|lead<<8|lead3<<16|lead4<<24 != cont {
		return badUTF8, 0
	}
	if (exactZero(x&(ones*0xFE)^(ones*0xC0))|lead4&((x<<4)|(x<<5)&((x<<6)|(x<<7))))&highs != 0 {
		return badUTF8, 0
	}
	if lead3 != 0 || prev >= 0xE0 {
		before := x<<8 | prev
		// Lanes whose byte before is one of the four leaders; bits 5
		// and 4 of a continuation byte say which quarter of 80..BF it
		// is in.
		e0 := exactZero(before ^ (ones * 0xE0))
		ed := exactZero(before ^ (ones * 0xED))
		f0 := exactZero(before ^ (ones * 0xF0))
		f4 := exactZero(before ^ (ones * 0xF4))
		b5, b4 := x<<2, x<<3
		if (e0&^b5|ed&b5|f0&^b5&^b4|f4&(b5|b4))&highs != 0 {
			return badUTF8, 0
		}
	}
	return lead>>56 | lead3>>48 | lead4>>40, x >> 56
}

// exactZero marks, in its high bit, each byte of v that is zero, with no
// false marks from borrows (unlike the usual test).
func exactZero(v uint64) uint64 {
	const low7 = ones * 0x7F
	return ^((v&low7 + low7) | v | low7)
}
