package tokens

import "github.com/tidwall/gjson"

// CharsReference is the estimator Chars replaced: a generic JSON-path
// reading of the same rule. Tests compare the one-pass Chars with it.
var CharsReference = charsReference

// charsReference reads each field by gjson path, unescaping as it goes.
func charsReference(raw []byte) int {
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
