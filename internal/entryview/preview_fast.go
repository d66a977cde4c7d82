package entryview

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/session"
	"github.com/tidwall/gjson"
)

// fastPreview is Preview's text without decoding the whole message: it
// reads only the fields a preview shows, and stops gathering once what it
// has decides the clipped line (a line break after some text, or more
// than width letters). A table of a long session previews every message,
// and decoding each with encoding/json was most of `pith context`'s time.
// ok is false for anything it cannot vouch for — a field it shows of
// another type than the message format's, text that is not valid UTF-8 —
// and Preview then decodes the message as before, so both give the same
// line. It trusts the JSON's syntax, which the session's parse checked,
// and the types of the fields it does not show.
func fastPreview(m session.Message, width int) (s string, ok bool) {
	r := gjson.ParseBytes(m.Raw)
	if !r.IsObject() {
		return "", false
	}
	str := func(key string) (string, bool) {
		v := r.Get(key)
		switch v.Type {
		case gjson.Null:
			return "", true
		case gjson.String:
			return v.Str, utf8.ValidString(v.Str)
		}
		return "", false
	}
	switch m.Role {
	case session.RoleBashExecution:
		c, ok := str("command")
		return "$ " + c, ok
	case session.RoleCompactionSummary, session.RoleBranchSummary:
		return str("summary")
	}
	var b strings.Builder
	parts := 0
	// add appends a part as strings.Join(parts, " ") would, and reports
	// whether the preview is decided.
	add := func(part string) bool {
		if parts > 0 {
			b.WriteByte(' ')
		}
		parts++
		b.WriteString(part)
		return decided(b.String(), width)
	}
	content := r.Get("content")
	switch {
	case content.Type == gjson.String:
		if !utf8.ValidString(content.Str) {
			return "", false
		}
		add(content.Str)
	case content.IsArray():
		ok := true
		fail := func() bool { ok = false; return false } // ends the ForEach
		content.ForEach(func(_, block gjson.Result) bool {
			if !block.IsObject() {
				return fail()
			}
			typ := block.Get("type")
			if typ.Type != gjson.String {
				return fail()
			}
			var part string
			switch typ.Str {
			case "text":
				t := block.Get("text")
				if t.Exists() && t.Type != gjson.String || !utf8.ValidString(t.Str) {
					return fail()
				}
				part = t.Str
			case "toolCall":
				n := block.Get("name")
				if n.Exists() && n.Type != gjson.String || !utf8.ValidString(n.Str) {
					return fail()
				}
				args := block.Get("arguments") // as raw as a json.RawMessage: null stays "null"
				if !utf8.ValidString(args.Raw) {
					return fail()
				}
				part = "→ " + n.Str + "(" + args.Raw + ")"
			case "image":
				part = "[image]"
			default:
				return true
			}
			return !add(part)
		})
		if !ok {
			return "", false
		}
	case content.Exists() && content.Type != gjson.Null:
		return "", false // neither a string nor blocks: as Decode has it
	}
	s = b.String()
	if s == "" {
		e, ok := str("errorMessage")
		if !ok {
			return "", false
		}
		if e != "" {
			s = "error: " + e
		}
	}
	return s, true
}

// decided reports whether s, the parts of a preview gathered so far,
// decides ClipLine's result: the first line has ended (a line break after
// some text, and more text after it, or TrimSpace would drop the break),
// or it holds more than width letters, so the cut falls inside it.
func decided(s string, width int) bool {
	letters := 0
	seen, broken := false, false
	for _, c := range s {
		if unicode.IsSpace(c) {
			broken = broken || seen && c == '\n'
			continue
		}
		if broken {
			return true
		}
		seen = true
		letters++
		if letters > width {
			return true
		}
	}
	return false
}
