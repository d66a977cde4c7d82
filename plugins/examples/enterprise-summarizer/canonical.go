package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// A message reaches the prompt builder either as it came from the host
// (no secret could be in it: mayHoldSecret) or re-encoded by the full
// redaction: keys sorted and unique, no spaces, <, > and & escaped. The
// prompt must not depend on which: it is the prompt of the re-encoded form.
// Two things could tell them apart, and are handled here:
//   - decoding into a struct, two keys naming the same field (a duplicate,
//     or "role" and "Role": encoding/json matches names in any case) are
//     applied in the order they appear, which re-encoding changes;
//   - a tool call's arguments are shown as JSON text, not decoded.

// decodeMessage decodes raw as its re-encoded form would decode: the
// message and its content blocks. It reports false for a message that does
// not decode as one (a field of the wrong type), and the full redaction's
// error for one it cannot decode at all.
func decodeMessage(raw []byte) (messageHead, []block, bool, error) {
	if content, once := fieldsOnce(raw); once {
		m, blocks, err := decodeKnown(raw, content)
		var syntax *json.SyntaxError
		if !errors.As(err, &syntax) {
			return m, blocks, err == nil, nil
		}
	}
	// Fields named twice, or not one JSON value: read what the full
	// redaction would have written, or fail as it does.
	v, err := decodeAny(raw)
	if err != nil {
		return messageHead{}, nil, false, fmt.Errorf("decode message: %w", err)
	}
	c, err := json.Marshal(v)
	if err != nil {
		return messageHead{}, nil, false, fmt.Errorf("encode message: %w", err)
	}
	m, blocks, err := decodeGeneral(c)
	return m, blocks, err == nil, nil
}

// decodeKnown decodes the message and its content in one go, of the type
// the content's first byte says. A content that does not decode cleanly
// takes the general way, which keeps the blocks that did.
func decodeKnown(raw []byte, content byte) (messageHead, []block, error) {
	switch content {
	case '[':
		var m blocksMessage
		if json.Unmarshal(raw, &m) == nil {
			return m.messageHead, m.Content, nil
		}
	case '"', 'n':
		var m textMessage
		if json.Unmarshal(raw, &m) == nil {
			return m.messageHead, []block{{Type: "text", Text: m.Content}}, nil
		}
	default: // no content, or one that holds no blocks
		var m messageHead
		err := json.Unmarshal(raw, &m)
		return m, nil, err
	}
	return decodeGeneral(raw)
}

// decodeGeneral decodes the message, then its content (blocks).
func decodeGeneral(raw []byte) (messageHead, []block, error) {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return messageHead{}, nil, err
	}
	return m.messageHead, m.blocks(), nil
}

// The fields of message and block, lower-cased.
var (
	messageFields = []string{"role", "content", "summary", "command", "output", "exitcode"}
	blockFields   = []string{"type", "text", "thinking", "name", "arguments"}
)

// fieldsOnce reports whether, in the valid JSON raw, no field of message is
// named twice (in any letter case) at the top level, nor a field of block
// in an object of its content array: then the order of the keys does not
// matter to decoding. A key it cannot judge cheaply (escaped, non-ASCII)
// or anything unexpected counts as a repeat: the caller then takes the
// slow, exact way. It also returns the first byte of the content, or 0.
func fieldsOnce(raw []byte) (content byte, once bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return 0, true // not an object: no field is set, in any order
	}
	ok := true
	at := -1
	seen := 0
	i = eachMember(raw, i, func(key []byte, v int) bool {
		f := fieldIndex(key, messageFields)
		if f == -2 || f >= 0 && seen&(1<<f) != 0 {
			ok = false
			return false
		}
		if f >= 0 {
			seen |= 1 << f
		}
		if f == 1 {
			at = v
		}
		return true
	})
	if !ok || i < 0 {
		return 0, false
	}
	if at < 0 {
		return 0, true
	}
	if raw[at] != '[' {
		return raw[at], true
	}
	return '[', eachElement(raw, at, func(v int) bool {
		if raw[v] != '{' {
			return true
		}
		seen := 0
		end := eachMember(raw, v, func(key []byte, _ int) bool {
			f := fieldIndex(key, blockFields)
			if f == -2 || f >= 0 && seen&(1<<f) != 0 {
				return false
			}
			if f >= 0 {
				seen |= 1 << f
			}
			return true
		})
		return end >= 0
	}) >= 0
}

// fieldIndex is the index in fields of the field key names, in any ASCII
// letter case; -1 for none, -2 for a key that cannot be judged byte-wise.
func fieldIndex(key []byte, fields []string) int {
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return -2
		}
	}
	for f, name := range fields {
		if len(key) == len(name) && bytes.EqualFold(key, []byte(name)) {
			return f
		}
	}
	return -1
}

// eachMember calls fn with each key of the object at raw[i] and the index
// of its value, until fn returns false; it returns the index after the
// object, or -1 if fn stopped it or raw is not what was expected.
func eachMember(raw []byte, i int, fn func(key []byte, v int) bool) int {
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return i + 1
	}
	for i < len(raw) && raw[i] == '"' {
		end := skipString(raw, i)
		if end < 0 {
			return -1
		}
		key := raw[i+1 : end-1]
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return -1
		}
		v := skipSpace(raw, i+1)
		if v >= len(raw) || !fn(key, v) {
			return -1
		}
		i = skipSpace(raw, skipValue(raw, v))
		if i < 0 || i >= len(raw) {
			return -1
		}
		switch raw[i] {
		case '}':
			return i + 1
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return -1
		}
	}
	return -1
}

// eachElement calls fn with the index of each element of the array at
// raw[i], until fn returns false; it returns the index after the array, or
// -1 if fn stopped it or raw is not what was expected.
func eachElement(raw []byte, i int, fn func(v int) bool) int {
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return i + 1
	}
	for i < len(raw) {
		if !fn(i) {
			return -1
		}
		i = skipSpace(raw, skipValue(raw, i))
		if i < 0 || i >= len(raw) {
			return -1
		}
		switch raw[i] {
		case ']':
			return i + 1
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return -1
		}
	}
	return -1
}

func skipSpace(raw []byte, i int) int {
	if i < 0 {
		return i
	}
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at raw[i], or -1.
// A quote ends it when an even number of backslashes precede it.
func skipString(raw []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(raw[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		n := 0
		for raw[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// skipValue returns the index after the value starting at raw[i], or -1.
func skipValue(raw []byte, i int) int {
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for ; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				i = skipString(raw, i)
				if i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default: // number, true, false, null
		for ; i < len(raw); i++ {
			switch raw[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return i
	}
}

// canonicalValue is a JSON value as the re-encoded message spells it: the
// text a tool call's argument shows in the prompt.
func canonicalValue(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	switch v[0] {
	case '"':
		if plainString(v) {
			return string(v)
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			if out, err := json.Marshal(s); err == nil {
				return string(out)
			}
		}
	case '{', '[':
		if x, err := decodeAny(v); err == nil {
			if out, err := json.Marshal(x); err == nil {
				return string(out)
			}
		}
	default: // numbers keep their text; true, false, null are spelled one way
		return string(v)
	}
	return string(v)
}

// plainString reports whether the JSON string literal v is spelled the way
// json.Marshal spells its value: printable ASCII other than <, > and &, and
// only the escapes Marshal writes itself.
func plainString(v []byte) bool {
	body := v[1 : len(v)-1]
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '\\':
			i++
			if i == len(body) {
				return false
			}
			switch body[i] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			default:
				return false
			}
		case c < 0x20 || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&':
			return false
		}
	}
	return true
}
