package session

import "errors"

// Fast walks over JSON that was already validated (an entry's Raw or a
// part of it), for the hot paths that need a few fields of many messages:
// they skip every other value with the same word-at-a-time string scan that
// opens a session, and allocate nothing for values they do not keep.

// ObjectFields calls fn with each member of the JSON object raw: its key
// (decoded when it has escapes) and its value's raw bytes, a slice of raw.
// It stops early when fn returns false, and reports false when raw is not
// an object.
func ObjectFields(raw []byte, fn func(key string, value []byte) bool) bool {
	p := scanner{s: raw}
	p.ws()
	if p.i >= len(raw) || raw[p.i] != '{' {
		return false
	}
	stopped := false
	p.object(0, func(key []byte, esc bool) bool {
		if stopped {
			return false
		}
		k := unsafeString(key)
		if esc {
			k = decodeEscaped(key)
		}
		start := p.i
		p.value(1)
		if p.err == "" && !fn(k, raw[start:p.i]) {
			stopped = true
			p.err = "stopped" // ends the walk
		}
		return true
	})
	return p.err == "" || stopped
}

// ArrayElements calls fn with the raw bytes of each element of the JSON
// array raw, stopping early when fn returns false. It reports false when
// raw is not an array.
func ArrayElements(raw []byte, fn func(value []byte) bool) bool {
	p := scanner{s: raw}
	p.ws()
	if p.i >= len(raw) || raw[p.i] != '[' {
		return false
	}
	for more := p.firstElement(); more; more = p.nextElement() {
		start := p.i
		p.value(1)
		if p.err != "" {
			return false
		}
		if !fn(raw[start:p.i]) {
			return true
		}
	}
	return p.err == ""
}

// StringValue decodes a raw JSON string; ok is false for any other value.
// A string without escapes is returned without copying.
func StringValue(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	content := raw[1 : len(raw)-1]
	for _, c := range content {
		if c == '\\' {
			return decodeEscaped(content), true
		}
	}
	return unsafeString(content), true
}

// ValidJSON checks that raw is exactly one JSON value, as strictly as
// JSON.parse and no deeper than jsondepth.Max; the error says what is
// wrong. Use it, not gjson.Valid, on JSON read from files or peers:
// gjson.Valid recurses without a limit, and a deep enough value kills the
// process.
func ValidJSON(raw []byte) error {
	p := scanner{s: raw}
	p.value(0)
	p.ws()
	if p.err == "" && p.i != len(raw) {
		p.fail("text after the value")
	}
	if p.err != "" {
		return errors.New(p.err)
	}
	return nil
}
