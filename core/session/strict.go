package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/jsondepth"
)

// Strict parsing of what a client of `pith serve` asks to append.
//
// Session readers (pi's JSON.parse, the scanner above) take the last of
// two equal keys; a check that reads the first one is bypassed by
// {"type":"custom","type":"compaction",…}. So a client's entry is parsed
// once, strictly, and what is written is built from that parse:
//
//   - one JSON object, valid UTF-8, no key twice in any object (keys are
//     compared decoded: "t\u0079pe" is "type"), no lone surrogate escape in
//     a key, nested no deeper than jsondepth.Max as it will be written;
//   - only the entry types an agent writes: message, custom,
//     custom_message, label, model_change, thinking_level_change and
//     session_info. compaction and branch_summary come from the engine
//     only, session headers from nobody;
//   - a message's role is one an agent sends: user, assistant, toolResult,
//     bashExecution or custom (compactionSummary and branchSummary exist
//     only in a built context, and a stored one would pass for a summary);
//   - id, parentId and timestamp are the server's: a client's values are
//     dropped, and the Store assigns fresh ones as for any append.
//
// What is written is the client's members minus the dropped ones, in the
// client's order, with insignificant whitespace removed so a pretty-printed
// object still becomes one line.

// ErrInvalidClientInput is wrapped by every refusal of ParseClientEntry
// and CheckClientMessage; the error names the problem.
var ErrInvalidClientInput = errors.New("invalid client input")

// clientEntryTypes are the entry types a client may append.
var clientEntryTypes = map[string]bool{
	TypeMessage: true, TypeCustom: true, TypeCustomMessage: true, TypeLabel: true,
	TypeModelChange: true, TypeThinkingLevelChange: true, TypeSessionInfo: true,
}

// clientRoles are the message roles a client may append.
var clientRoles = map[string]bool{
	RoleUser: true, RoleAssistant: true, RoleToolResult: true, RoleBashExecution: true, RoleCustom: true,
}

// serverFields are assigned by the server; a client's values are dropped.
var serverFields = map[string]bool{"type": true, "id": true, "parentId": true, "timestamp": true}

// ClientEntry is an entry a client sent, checked and ready to append.
type ClientEntry struct {
	Type string
	// Fields is the entry object without type, id, parentId and timestamp,
	// compacted to one line: a Draft's Fields.
	Fields json.RawMessage
	// Message is a message entry's message object, compacted; nil for
	// other types.
	Message json.RawMessage
}

// ParseClientEntry checks an entry object sent by a client (see above) and
// returns what to append. Every error wraps ErrInvalidClientInput.
func ParseClientEntry(raw []byte) (ClientEntry, error) {
	var ce ClientEntry
	var typeRaw, msgRaw []byte
	var kept [][]byte
	err := parseStrict(raw, jsondepth.Max, func(key string, member, value []byte) {
		switch {
		case key == "type":
			typeRaw = value
			return
		case serverFields[key]:
			return
		case key == "message":
			msgRaw = value
		}
		kept = append(kept, member)
	})
	if err != nil {
		return ce, err
	}
	if typeRaw == nil {
		return ce, invalid(`no "type"`)
	}
	typ, ok := StringValue(typeRaw)
	if !ok {
		return ce, invalid(`"type" is not a string`)
	}
	switch {
	case typ == TypeCompaction || typ == TypeBranchSummary:
		return ce, invalid("%s entries are written by the engine (Compact, Navigate), not appended", typ)
	case !clientEntryTypes[typ]:
		return ce, invalid("entry type %q cannot be appended", typ)
	}
	ce.Type = typ
	if typ == TypeMessage {
		if len(msgRaw) == 0 || msgRaw[0] != '{' {
			return ce, invalid(`a message entry needs a "message" object`)
		}
		if err := checkRole(msgRaw, "message.role"); err != nil {
			return ce, err
		}
		if ce.Message, err = compact(msgRaw); err != nil {
			return ce, err
		}
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	b.WriteByte('{')
	for i, m := range kept {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
	b.WriteByte('}')
	if ce.Fields, err = compact(b.Bytes()); err != nil {
		return ce, err
	}
	return ce, nil
}

// CheckClientMessage checks an agent message sent by a client on its own
// (it is appended wrapped in a message entry, one level deeper) and returns
// it compacted to one line. Every error wraps ErrInvalidClientInput.
func CheckClientMessage(raw []byte) (json.RawMessage, error) {
	if err := parseStrict(raw, jsondepth.Max-1, nil); err != nil {
		return nil, err
	}
	if err := checkRole(raw, "role"); err != nil {
		return nil, err
	}
	return compact(raw)
}

// checkRole checks the "role" of an already strictly parsed message.
func checkRole(msg []byte, name string) error {
	var roleRaw []byte
	ObjectFields(msg, func(k string, v []byte) bool {
		if k == "role" {
			roleRaw = v
			return false
		}
		return true
	})
	role, ok := StringValue(roleRaw)
	switch {
	case roleRaw == nil:
		return invalid("no %q", name)
	case !ok:
		return invalid("%q is not a string", name)
	case role == RoleCompactionSummary || role == RoleBranchSummary:
		return invalid("%s messages are built by the engine, not appended", role)
	case !clientRoles[role]:
		return invalid("message role %q cannot be appended", role)
	}
	return nil
}

func compact(raw []byte) (json.RawMessage, error) {
	var b bytes.Buffer
	b.Grow(len(raw))
	if err := json.Compact(&b, raw); err != nil {
		return nil, invalid("%v", err) // unreachable after parseStrict
	}
	return b.Bytes(), nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidClientInput, fmt.Sprintf(format, args...))
}

// parseStrict validates raw as one JSON object under the rules above and
// calls member, when set, for each top-level member: its decoded key, the
// member's raw text (key to end of value) and the value's.
func parseStrict(raw []byte, maxDepth int, member func(key string, member, value []byte)) error {
	if !utf8.Valid(raw) {
		n := 0
		for n < len(raw) {
			r, size := utf8.DecodeRune(raw[n:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			n += size
		}
		return invalid("invalid UTF-8 at byte %d", n)
	}
	p := strictParser{scanner: scanner{s: raw}, maxDepth: maxDepth, at: -1}
	p.ws()
	if p.i >= len(raw) || raw[p.i] != '{' {
		return invalid("not a JSON object")
	}
	p.object(0, member)
	if p.err == "" {
		p.ws()
		if p.i != len(raw) {
			p.fail("text after the object")
		}
	}
	if p.err != "" {
		if p.at >= 0 {
			return invalid("%s at byte %d", p.err, p.at)
		}
		return invalid("malformed JSON: %s (at byte %d)", p.err, p.i)
	}
	return nil
}

// strictParser is the scanner with duplicate-key detection and a
// configurable depth. Its recursion is bounded by maxDepth.
type strictParser struct {
	scanner
	maxDepth int
	at       int // where a strictness error (not a syntax error) was found, or -1
}

func (p *strictParser) strict(at int, format string, args ...any) {
	if p.err == "" {
		p.err, p.at = fmt.Sprintf(format, args...), at
	}
}

func (p *strictParser) value(depth int) {
	p.ws()
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case '{':
			p.object(depth, nil)
			return
		case '[':
			p.array(depth)
			return
		}
	}
	p.scanner.value(depth) // a scalar, or the syntax error
}

func (p *strictParser) deep(depth int) bool {
	if depth >= p.maxDepth {
		p.strict(p.i, "nested deeper than %d levels", jsondepth.Max)
		return true
	}
	return false
}

func (p *strictParser) array(depth int) {
	if p.deep(depth) {
		return
	}
	p.i++ // [
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return
	}
	for p.err == "" {
		p.value(depth + 1)
		p.ws()
		if p.i >= len(p.s) {
			p.fail("unterminated array")
			return
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return
		default:
			p.fail("expected , or ] in an array")
			return
		}
	}
}

// object parses an object, refusing a key seen before in it.
func (p *strictParser) object(depth int, member func(key string, member, value []byte)) {
	if p.deep(depth) {
		return
	}
	p.i++ // {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return
	}
	var keys []string
	var seen map[string]bool // past a few keys a map beats a scan
	for p.err == "" {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			p.fail("expected a key in an object")
			return
		}
		keyAt := p.i
		content, esc := p.str()
		if p.err != "" {
			return
		}
		key := string(content)
		if esc {
			if !wellPairedSurrogates(content) {
				p.strict(keyAt, "a key with a lone surrogate escape")
				return
			}
			key = decodeEscaped(content)
		}
		dup := false
		if seen != nil {
			dup = seen[key]
			seen[key] = true
		} else {
			for _, k := range keys {
				if k == key {
					dup = true
					break
				}
			}
			keys = append(keys, key)
			if len(keys) > 8 {
				seen = make(map[string]bool, 2*len(keys))
				for _, k := range keys {
					seen[k] = true
				}
			}
		}
		if dup {
			p.strict(keyAt, "duplicate key %s", strconv.Quote(key))
			return
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			p.fail("expected : after a key")
			return
		}
		p.i++
		p.ws()
		valueAt := p.i
		p.value(depth + 1)
		if p.err != "" {
			return
		}
		if member != nil {
			member(key, p.s[keyAt:p.i], p.s[valueAt:p.i])
		}
		p.ws()
		if p.i >= len(p.s) {
			p.fail("unterminated object")
			return
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return
		default:
			p.fail("expected , or } in an object")
			return
		}
	}
}

// wellPairedSurrogates reports whether every \uD800–\uDFFF escape in a
// string's content is a high surrogate followed by a low one. A lone one
// has no UTF-8 form, so two different keys would decode alike.
func wellPairedSurrogates(content []byte) bool {
	for i := 0; i+1 < len(content); i++ {
		if content[i] != '\\' {
			continue
		}
		if content[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		u, _ := strconv.ParseUint(string(content[i+2:i+6]), 16, 16) // validated by str
		switch {
		case u >= 0xDC00 && u <= 0xDFFF:
			return false
		case u >= 0xD800 && u <= 0xDBFF:
			if i+12 > len(content) || content[i+6] != '\\' || content[i+7] != 'u' {
				return false
			}
			lo, _ := strconv.ParseUint(string(content[i+8:i+12]), 16, 16)
			if lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 11
		default:
			i += 5
		}
	}
	return true
}
