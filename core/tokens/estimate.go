package tokens

import "unsafe"

// ImageChars is what one image block counts for, in characters.
const ImageChars = 4800

// Estimate returns estimateTokens for a message given as raw JSON (docs/behaviour.md §3):
// ceil(chars/4), chars counted in UTF-16 code units.
func Estimate(raw []byte) int {
	return (Chars(raw) + 3) / 4
}

// EstimateText is the same ceil(chars/4) estimate for plain text (a
// summary, a prompt), chars counted in UTF-16 code units.
func EstimateText(s string) int { return (Units(s) + 3) / 4 }

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func unsafeBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
