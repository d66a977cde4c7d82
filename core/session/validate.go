package session

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The well-formedness of what is appended, checked once here for every
// entry point: the engine's messages (AppendMessages, AfterTurn), drafts
// from the engine, plugins and commands (every Draft goes through
// buildLine, so also BuildLine's database stores), and the strict parser's
// client entries on top of their own rules (strict.go).

// envelopeFields are the members of an entry the store writes: a client's
// values are dropped, a draft may not set them.
var envelopeFields = map[string]bool{"type": true, "id": true, "parentId": true, "timestamp": true}

// checkFields checks a draft's fields: one JSON object as JSON.parse takes
// it, no deeper than a line may be, that does not set the envelope the
// store writes (type, id, parentId, timestamp): a second "id" in a line is
// the one readers take, which would hang the entry elsewhere in the tree.
func checkFields(fields []byte) error {
	p := scanner{s: fields}
	p.ws()
	if p.i >= len(fields) || fields[p.i] != '{' {
		return errors.New("fields must be a JSON object")
	}
	envelope := ""
	p.object(0, func(key []byte, esc bool) bool {
		if k := string(keyText(key, esc)); envelopeFields[k] && envelope == "" {
			envelope = k
		}
		return false
	})
	if err := p.end(); err != nil {
		return fmt.Errorf("fields are not valid JSON: %w", err)
	}
	if envelope != "" {
		return fmt.Errorf("fields must not set %q: the store writes the entry's type, id, parentId and timestamp", envelope)
	}
	return nil
}

// MessageDraft checks an agent message — one JSON object as JSON.parse
// takes it, no deeper than it may be once wrapped in its entry, with a
// non-empty string "role" — and returns the message entry that holds it.
// It reads the message once, at the scanner's speed: tool results can be
// megabytes.
func MessageDraft(raw json.RawMessage) (Draft, error) {
	// One level deeper once wrapped in {"message": …}.
	p := scanner{s: raw, shallower: 1}
	p.ws()
	if p.i >= len(raw) || raw[p.i] != '{' {
		return Draft{}, errors.New("a message must be a JSON object")
	}
	role := ""
	p.object(0, func(key []byte, esc bool) bool {
		if string(keyText(key, esc)) != "role" {
			return false
		}
		role, _ = p.stringValue(1) // the last one wins, as in JSON.parse
		return true
	})
	if err := p.end(); err != nil {
		return Draft{}, fmt.Errorf("a message must be a JSON object: %w", err)
	}
	if role == "" {
		return Draft{}, errors.New(`the message has no "role"`)
	}
	fields := make([]byte, 0, len(raw)+12)
	fields = append(fields, `{"message":`...)
	fields = append(fields, raw...)
	fields = append(fields, '}')
	return Draft{Type: TypeMessage, Fields: json.RawMessage(fields)}, nil
}

// end finishes a scan of one value: only whitespace may follow it. The
// error says what was wrong and where.
func (p *scanner) end() error {
	if p.err == "" {
		p.ws()
		if p.i != len(p.s) {
			p.fail("text after the value")
		}
	}
	if p.err != "" {
		return fmt.Errorf("%s (at byte %d)", p.err, p.errAt)
	}
	return nil
}
