package session

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/pith-dev/pith/core/jsondepth"
)

// FuzzStrictOracle checks ParseClientEntry's JSON verdict against
// jsontext, a parser written by others to RFC 8259 with duplicate names
// and invalid UTF-8 refused (the strict rules). The entry policy (types,
// roles) is strict.go's own and is applied on the jsontext side as well;
// the depth limits agree (jsontext stops at 10000 open containers, as
// jsondepth.Max).
//
// One intended difference: a lone surrogate escape ("\ud800") in a value
// is accepted, since pi's JSON.parse accepts it and sessions carry it;
// jsontext refuses it unless AllowInvalidUTF8. In a key the strict parser
// refuses it (two such keys decode alike), so the comparison is:
//   - jsontext, strict options, accepts and the policy holds → accepted;
//   - accepted → the input is UTF-8 and jsontext accepts it with only
//     surrogate escapes relaxed, the policy holding;
//   - jsontext, surrogates relaxed, accepts and the policy holds but
//     strict refuses → the refusal names a lone surrogate key.
//
// For an accepted entry the members written are the input's minus type,
// id, parentId and timestamp, in the input's order, each value the input's
// with only whitespace removed.
func FuzzStrictOracle(f *testing.F) {
	addOracleSeeds(f)
	for _, s := range []string{
		`{"type":"custom","customType":"x","data":{"k":[1,2,{"a":null}]}}`,
		`{"type":"custom","type":"compaction"}`,
		`{"type":"custom","t\u0079pe":"compaction"}`,
		`{"type":"custom","a":{"b":1,"\u0062":2}}`,
		`{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}`,
		`{"type":"message","message":{"role":"user","role":"compactionSummary"}}`,
		`{"type":"label","targetId":"a","label":"x","id":"mine","timestamp":"t","parentId":"p"}`,
		"{\n \"type\" : \"session_info\" ,\n \"name\" : \"n\"\n}\r\n",
		`{"type":"custom","\ud800":1}`, `{"type":"custom","v":"\ud800"}`, `{"type":"custom","v":"\udc00\ud800"}`,
		`{"type":"custom","\ud83d\ude00":1,"\ud83d\ude00":2}`, `{"type":"custom","v":"\ud83d\ude00"}`,
		"{\"type\":\"custom\",\"d\":\"\xff\"}", "{\"type\":\"custom\",\"d\":\"\xed\xa0\x80\"}",
		"\ufeff{\"type\":\"custom\"}", `{"type":"custom"} {}`, `{"type":"custom",}`, `{"type":"custom","n":01}`,
		`{"type":"custom","n":-0.0e+5,"m":1E400}`, "{\"type\":\"custom\",\"s\":\"a\tb\"}", `{"type":"custom","s":"\/\b\f"}`,
		`{"type":"custom","data":` + strings.Repeat("[", jsondepth.Max-1) + strings.Repeat("]", jsondepth.Max-1) + `}`,
		`{"type":"custom","data":` + strings.Repeat("[", jsondepth.Max) + strings.Repeat("]", jsondepth.Max) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ce, err := ParseClientEntry(raw)
		exact, exactErr := jsontextMembers(raw, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false))
		relaxed, relaxedErr := jsontextMembers(raw, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(true))
		if relaxedErr == nil && !utf8.Valid(raw) {
			relaxedErr = errors.New("invalid UTF-8")
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidClientInput) {
				t.Fatalf("error does not wrap ErrInvalidClientInput: %v", err)
			}
			if exactErr == nil && clientPolicy(exact) == "" {
				t.Fatalf("refused (%v) what jsontext accepts: %q", err, raw)
			}
			if relaxedErr == nil && clientPolicy(relaxed) == "" && !strings.Contains(err.Error(), "lone surrogate") {
				t.Fatalf("refused (%v) what jsontext accepts with lone surrogates: %q", err, raw)
			}
			return
		}
		if relaxedErr != nil {
			t.Fatalf("accepted what jsontext refuses (%v): %q", relaxedErr, raw)
		}
		if why := clientPolicy(relaxed); why != "" {
			t.Fatalf("accepted an entry that %s: %q", why, raw)
		}
		var want []jsontextMember
		for _, m := range relaxed {
			if !envelopeFields[m.name] {
				want = append(want, m)
			}
		}
		got, gotErr := jsontextMembers(ce.Fields, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(true))
		if gotErr != nil {
			t.Fatalf("the fields written are not JSON (%v): %q", gotErr, ce.Fields)
		}
		if !isCompact(ce.Fields) {
			t.Fatalf("the fields written are not compact: %q", ce.Fields)
		}
		if len(got) != len(want) {
			t.Fatalf("%d members written, want %d: %q from %q", len(got), len(want), ce.Fields, raw)
		}
		for i := range got {
			if got[i].name != want[i].name || !bytes.Equal(got[i].value, compactValue(t, want[i].value)) {
				t.Fatalf("member %d is %q:%s, want %q:%s", i, got[i].name, got[i].value, want[i].name, want[i].value)
			}
		}
		if ce.Type == TypeMessage {
			msg := memberValue(relaxed, "message")
			if !bytes.Equal(ce.Message, compactValue(t, msg)) {
				t.Fatalf("message %q, want %q", ce.Message, msg)
			}
		}
	})
}

// jsontextMember is one member of an object as jsontext reads it: the
// decoded name and the value's raw text, as in the input.
type jsontextMember struct {
	name  string
	value jsontext.Value
}

// jsontextMembers reads raw as exactly one JSON object (whitespace around
// it allowed, nothing else) with jsontext under opts, validating every
// nested value, and returns its top-level members in order.
func jsontextMembers(raw []byte, opts ...jsontext.Options) ([]jsontextMember, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), opts...)
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, errors.New("not an object")
	}
	var out []jsontextMember
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // before the next read voids the token
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		out = append(out, jsontextMember{name: name, value: bytes.Clone(v)})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("text after the object")
	}
	return out, nil
}

// memberValue is the value of the last member called name, nil without one.
func memberValue(ms []jsontextMember, name string) jsontext.Value {
	var v jsontext.Value
	for _, m := range ms {
		if m.name == name {
			v = m.value
		}
	}
	return v
}

// stringMember is the decoded string value of the last member called name;
// ok is false when there is none or it is not a string.
func stringMember(ms []jsontextMember, name string) (s string, ok bool) {
	v := memberValue(ms, name)
	if v.Kind() != '"' {
		return "", false
	}
	// The value was validated as read; an error here is invalid UTF-8
	// or a lone surrogate, which come out as U+FFFD.
	b, _ := jsontext.AppendUnquote(nil, v)
	return string(b), true
}

// clientPolicy is strict.go's entry policy on jsontext's members: "" when
// the entry may be appended, else what it breaks.
func clientPolicy(ms []jsontextMember) string {
	typ, ok := stringMember(ms, "type")
	switch {
	case !ok:
		return "has no string type"
	case !clientEntryTypes[typ]:
		return "has a type clients may not append"
	case typ != TypeMessage:
		return ""
	}
	msg := memberValue(ms, "message")
	if msg.Kind() != '{' {
		return "is a message entry without a message object"
	}
	fields, err := jsontextMembers(msg, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return "has a message jsontext cannot read"
	}
	if role, ok := stringMember(fields, "role"); !ok || !clientRoles[role] {
		return "has a role clients may not append"
	}
	return ""
}

// compactValue is v with whitespace removed by jsontext, strings and
// numbers kept as written.
func compactValue(t *testing.T, v jsontext.Value) []byte {
	c := bytes.Clone(v)
	if err := (*jsontext.Value)(&c).Compact(); err != nil {
		t.Fatalf("jsontext cannot compact %q: %v", v, err)
	}
	return c
}

func isCompact(raw []byte) bool {
	c := jsontext.Value(bytes.Clone(raw))
	return c.Compact() == nil && bytes.Equal(c, raw)
}
