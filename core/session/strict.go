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
		case envelopeFields[key]:
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
	sp := strictPolicy{p: scanner{s: raw, shallower: jsondepth.Max - maxDepth}}
	p := &sp.p
	p.keys = sp.keysAt
	p.ws()
	if p.i >= len(raw) || raw[p.i] != '{' {
		return invalid("not a JSON object")
	}
	check := sp.keysAt(0)
	p.object(0, func(key []byte, esc bool) bool {
		if check(key, esc) {
			return true // refused
		}
		if member != nil {
			keyAt, valueAt := p.keyAt(key), p.i
			p.value(1)
			if p.err == "" {
				member(string(keyText(key, esc)), p.s[keyAt:p.i], p.s[valueAt:p.i])
			}
			return true
		}
		return false
	})
	if p.err == "" {
		p.ws()
		if p.i != len(raw) {
			p.fail("text after the object")
		}
	}
	switch {
	case p.err == "":
		return nil
	case p.refused:
		return invalid("%s at byte %d", p.err, p.errAt)
	default:
		return invalid("malformed JSON: %s (at byte %d)", p.err, p.errAt)
	}
}

// strictPolicy is the scanner with the strict parser's key checks: its
// keysAt gives every object the scanner opens a callback that refuses a
// duplicate or lone-surrogate key. Its depth limit is the scanner's
// (shallower), its recursion bounded by it.
type strictPolicy struct {
	p scanner
	// keys holds the keys seen so far in the object open at each depth.
	keys []keySet
}

// keysAt starts the key set of an object opened at depth and returns the
// check of its keys, which reports true when it refused one (the scan has
// failed then).
func (sp *strictPolicy) keysAt(depth int) func(key []byte, esc bool) bool {
	for len(sp.keys) <= depth {
		sp.keys = append(sp.keys, keySet{})
	}
	sp.keys[depth].reset()
	return func(key []byte, esc bool) bool {
		p := &sp.p
		if esc && !wellPairedSurrogates(key) {
			p.refuse(p.keyAt(key), "a key with a lone surrogate escape")
			return true
		}
		k := string(keyText(key, esc))
		if !sp.keys[depth].add(k) {
			p.refuse(p.keyAt(key), "duplicate key "+strconv.Quote(k))
			return true
		}
		return false
	}
}

// keySet is the keys of one object: a list while it is short, a map past
// a few keys, where a map beats a scan.
type keySet struct {
	list []string
	set  map[string]bool
}

func (ks *keySet) reset() {
	ks.list, ks.set = ks.list[:0], nil
}

// add records k and reports whether it is new.
func (ks *keySet) add(k string) bool {
	if ks.set != nil {
		if ks.set[k] {
			return false
		}
		ks.set[k] = true
		return true
	}
	for _, x := range ks.list {
		if x == k {
			return false
		}
	}
	ks.list = append(ks.list, k)
	if len(ks.list) > 8 {
		ks.set = make(map[string]bool, 2*len(ks.list))
		for _, x := range ks.list {
			ks.set[x] = true
		}
	}
	return true
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
