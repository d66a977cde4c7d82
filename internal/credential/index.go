package credential

// byFirst are the formats by the first byte of their prefix: the scan
// looks further only at a word's start with one of them.
var byFirst = func() (t [256][]format) {
	for _, f := range formats {
		t[f.prefix[0]] = append(t[f.prefix[0]], f)
	}
	return t
}()

// starts marks the first bytes of byFirst, wordByte the bytes a word is
// made of: tables, as the scan looks at every byte of every line read.
var starts, wordByte = func() (st, wb [256]bool) {
	for c := range 256 {
		st[c] = byFirst[c] != nil
		wb[c] = alnumUnder(byte(c))
	}
	return st, wb
}()

// Index returns where in text the first token of a known format starts,
// or -1. A token starts a word (is not preceded by a letter, digit or
// '_') and ends one: its body is all of the run of body bytes after the
// prefix, within the format's lengths.
func Index(text []byte) int {
	prev := byte(' ')
	for i, c := range text {
		if starts[c] && !wordByte[prev] {
			for j := range byFirst[c] {
				if tokenHere(text[i:], &byFirst[c][j]) {
					return i
				}
			}
		}
		prev = c
	}
	return -1
}

// tokenHere reports whether b starts with a token of format f. The
// prefix's second byte is compared on its own first: most words that
// start with a prefix's first byte ("s.global", "gs.apply") differ at the
// second, and a byte costs less than comparing the whole prefix.
func tokenHere(b []byte, f *format) bool {
	if len(b) < len(f.prefix)+f.min || b[1] != f.prefix[1] || string(b[:len(f.prefix)]) != f.prefix {
		return false
	}
	// The body is counted only as far as decides: to min when it may be
	// longer, one past max when it may not. Counted to the run's end, a
	// line of "AIza-AIza-…" would cost its length at every "AIza" ('-' is
	// a body byte and starts a word), quadratic in the line.
	limit := f.max + 1
	if f.max == 0 {
		limit = f.min
	}
	n := 0
	for _, c := range b[len(f.prefix):] {
		if n == limit || !f.body(c) {
			break
		}
		n++
	}
	return n >= f.min && (f.max == 0 || n == f.max)
}
