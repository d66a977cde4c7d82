package tokens

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// ImageChars is what one image block counts for, in characters.
const ImageChars = 4800

// Estimate returns estimateTokens for a message given as raw JSON (SPEC §3):
// ceil(chars/4), chars counted in UTF-16 code units.
func Estimate(raw []byte) int {
	return (Chars(raw) + 3) / 4
}

// Chars returns the characters a message counts for before the division.
func Chars(raw []byte) int {
	m := gjson.Parse(unsafeString(raw))
	chars := 0
	switch m.Get("role").Str {
	case "user":
		c := m.Get("content")
		if c.Type == gjson.String {
			return strUnits(c)
		}
		c.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "text" {
				chars += strUnits(b.Get("text"))
			}
			return true
		})
	case "assistant":
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "text":
				chars += strUnits(b.Get("text"))
			case "thinking":
				chars += strUnits(b.Get("thinking"))
			case "toolCall":
				chars += strUnits(b.Get("name"))
				if a := b.Get("arguments"); a.Exists() {
					chars += StringifiedLen(unsafeBytes(a.Raw))
				}
			}
			return true
		})
	case "toolResult", "custom":
		c := m.Get("content")
		if c.Type == gjson.String {
			return strUnits(c)
		}
		c.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "text":
				chars += strUnits(b.Get("text"))
			case "image":
				chars += ImageChars
			}
			return true
		})
	case "bashExecution":
		chars = strUnits(m.Get("command")) + strUnits(m.Get("output"))
	case "branchSummary", "compactionSummary":
		chars = strUnits(m.Get("summary"))
	}
	return chars
}

// strUnits is the UTF-16 length of a string value; non-strings count 0.
func strUnits(r gjson.Result) int {
	if r.Type != gjson.String {
		return 0
	}
	n, _ := jsonStringUnits(r.Raw)
	return n
}

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
