package session_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
)

// FuzzParseLine checks the line scanner against encoding/json: it never
// panics, it never rejects a line that is a valid JSON object with a type
// other than "session" (no valid line is lost), and what it accepts is
// valid JSON whose id, parentId, role and message it reports correctly.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"a1","parentId":"b2","message":{"role":"assistant","content":[{"type":"toolCall","name":"read","arguments":{"path":"x","n":1.0e2}}],"provider":"p","model":"m"}}`,
		`{"type":"compaction","summary":"s\u00e9\n","firstKeptEntryId":"x","tokensBefore":12}`,
		`{"type":"label","targetId":"x","label":null}`,
		`{"typ\u0065":"custom","id":"\u0061b"}`,
		`{"type":"message","message":{"role":"user"},"message":5}`,
		`{"type":"x","a":[1,-0.5,true,false,null,{"b":[]}]}`,
		`{"type":"x"} `, `{"type":"x"`, `{"type":"x",}`, `[1,2]`, `"str"`, `{}`, ``, `{"type":"session","id":"s"}`,
		"{\"type\":\"x\",\"s\":\"a\tb\"}", `{"type":"x","n":01}`, `{"type":"x","s":"\x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // one line at a time
		}
		e, err := session.ParseEntry(line)
		var ref map[string]json.RawMessage
		refErr := json.Unmarshal(line, &ref)
		validObject := json.Valid(line) && refErr == nil && ref != nil
		if err != nil {
			if validObject && !isSessionType(ref) {
				t.Fatalf("valid line rejected (%v): %q", err, line)
			}
			return
		}
		if !json.Valid(line) {
			t.Fatalf("invalid JSON accepted: %q", line)
		}
		if !bytes.Equal(e.Raw, line) {
			t.Fatal("Raw is not the line")
		}
		// The estimate measured while scanning is the one tokens.Estimate
		// computes from the message.
		if m := measuredEntry(t, line); m == nil {
			t.Fatalf("an entry alone, not one in a file: %q", line)
		} else if got, want := m.MessageTokens(), messageEstimate(m); got != want {
			t.Fatalf("MessageTokens %d, Estimate %d: %q", got, want, line)
		}
		if !utf8.Valid(line) {
			return // Go and Node both replace invalid bytes when decoding; the raw line is kept
		}
		// A map, not a struct: encoding/json matches struct fields without
		// regard to case, JSON.parse does not.
		str := func(k string) (string, bool) {
			var v string
			err := json.Unmarshal(ref[k], &v)
			return v, err == nil && len(ref[k]) > 0 && ref[k][0] == '"'
		}
		if s, ok := str("id"); ok && s != e.ID {
			t.Fatalf("id %q, want %q", e.ID, s)
		}
		if s, ok := str("parentId"); ok && s != e.ParentID {
			t.Fatalf("parentId %q, want %q", e.ParentID, s)
		}
		if msg := ref["message"]; e.Type == session.TypeMessage && len(msg) > 0 && msg[0] == '{' {
			if got := e.MessageRaw(); !bytes.Equal(got, msg) {
				t.Fatalf("message %q, want %q", got, msg)
			}
		}
	})
}

func isSessionType(m map[string]json.RawMessage) bool {
	var typ string
	return json.Unmarshal(m["type"], &typ) == nil && typ == session.TypeSession
}

// FuzzParse checks whole files: no panic, and encoding then parsing again
// gives the same entries (nothing is lost or changed by a rewrite).
func FuzzParse(f *testing.F) {
	f.Add([]byte("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"x\"}}\nbad\n{\"type\":\"label\",\"id\":\"b\",\"parentId\":\"a\"}"))
	f.Add([]byte("{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\",\"message\":{\"role\":\"hookMessage\"}}\n{\"type\":\"compaction\",\"firstKeptEntryIndex\":1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := session.Parse(bytes.Clone(data))
		if err != nil {
			return
		}
		// Read with the estimates measured: the same entries, each with
		// tokens.Estimate of its message.
		measured, err := session.ParseWith(bytes.Clone(data), session.ParseOptions{Estimates: true})
		if err != nil || len(measured.Entries) != len(file.Entries) {
			t.Fatalf("with estimates: %v, %d entries", err, len(measured.Entries))
		}
		for i, e := range measured.Entries {
			if !bytes.Equal(e.Raw, file.Entries[i].Raw) || e.Line != file.Entries[i].Line {
				t.Fatalf("with estimates, entry %d differs", i)
			}
			if got, want := e.MessageTokens(), messageEstimate(e); got != want {
				t.Fatalf("entry %d: MessageTokens %d, Estimate %d", i, got, want)
			}
		}
		var out bytes.Buffer
		if err := file.Encode(&out); err != nil {
			t.Fatal(err)
		}
		again, err := session.Parse(out.Bytes())
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if len(again.Entries) != len(file.Entries) {
			t.Fatalf("entries %d → %d", len(file.Entries), len(again.Entries))
		}
		for i := range file.Entries {
			if !bytes.Equal(again.Entries[i].Raw, file.Entries[i].Raw) {
				t.Fatalf("entry %d changed", i)
			}
		}
		session.NewTree(file.Entries).BuildContext(session.LeafDefault)
	})
}

// messageEstimate is tokens.Estimate of the entry's message, 0 without one.
func messageEstimate(e *session.Entry) int {
	if raw := e.MessageRaw(); raw != nil {
		return tokens.Estimate(raw)
	}
	return 0
}
