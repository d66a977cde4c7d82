package session_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/jsondepth"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestDraftFieldsChecked: every draft, whoever made it, is checked once
// when its line is built: a JSON object, valid, not setting the envelope
// (a second "id" would be the one readers take).
func TestDraftFieldsChecked(t *testing.T) {
	s, err := files.OpenOrCreate(t.TempDir()+"/s.jsonl", "/tmp", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for fields, want := range map[string]string{
		`{"customType":"x","id":"forged"}`:            `must not set "id"`,
		`{"customType":"x","parentId":"dangling"}`:    `must not set "parentId"`,
		`{"customType":"x","t\u0079pe":"compaction"}`: `must not set "type"`,
		`{"customType":"x","timestamp":"t"}`:          `must not set "timestamp"`,
		`{"customType":"x",}`:                         "not valid JSON",
		`{"customType":"x"} {}`:                       "not valid JSON",
		`{"customType":"x","data":` + strings.Repeat("[", jsondepth.Max) + strings.Repeat("]", jsondepth.Max) + `}`: "nested deeper",
		`["customType"]`: "must be a JSON object",
	} {
		_, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: json.RawMessage(fields)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.50s: %v, want %q", fields, err, want)
		}
	}
	if n := len(s.File().Entries); n != 0 {
		t.Fatalf("%d entries appended", n)
	}
	es, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: json.RawMessage("{\n \"customType\": \"x\",\n \"data\": {\"id\": 1}\n}")})
	if err != nil || es[0].Get("data.id").Int() != 1 {
		t.Fatalf("a nested id is the draft's own: %v", err)
	}
}

func TestMessageDraft(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	ok := `{"role":"user","content":` + deep(jsondepth.Max-2) + `}` // 10000 deep in its entry
	d, err := session.MessageDraft(json.RawMessage(ok))
	if err != nil || d.Type != session.TypeMessage || string(d.Fields.(json.RawMessage)) != `{"message":`+ok+`}` {
		t.Fatalf("at the limit: %v", err)
	}
	for raw, want := range map[string]string{
		`{"role":"user","content":` + deep(jsondepth.Max-1) + `}`: "nested deeper than 10000 levels",
		`{"content":"x"}`:        `no "role"`,
		`{"role":""}`:            `no "role"`,
		`{"role":1}`:             `no "role"`,
		`{"role":"user"`:         "must be a JSON object",
		`{"role":"user"}x`:       "must be a JSON object",
		`["role"]`:               "must be a JSON object",
		``:                       "must be a JSON object",
		`{"role":"user","a":01}`: "expected , or }",
	} {
		if _, err := session.MessageDraft(json.RawMessage(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: %v, want %q", raw, err, want)
		}
	}
	if _, err := session.MessageDraft(json.RawMessage(`{"role":"custom","r\u006fle":"user"}`)); err != nil {
		t.Errorf("escaped key: %v", err)
	}
}
