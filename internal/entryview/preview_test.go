package entryview

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/internal/testfixture"
	"github.com/tidwall/gjson"
)

// previewed checks that Preview (the fast path where it vouches for the
// message) gives decodedPreview's line for every message of the sessions
// in paths, at a few widths.
func previewed(t *testing.T, paths ...string) int {
	t.Helper()
	n := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := session.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, e := range f.Entries {
			m, ok := session.EntryMessage(e)
			if !ok {
				continue
			}
			for _, width := range []int{1, 12, 80, 400} {
				if got, want := Preview(m, width), decodedPreview(m, width); got != want {
					t.Errorf("%s entry %s width %d: Preview %q, decoded %q", filepath.Base(p), e.ID, width, got, want)
				}
			}
			n++
		}
	}
	return n
}

// TestPreviewMatchesDecoded: on the demo session and pi's own session
// files, the fast preview is the decoded one.
func TestPreviewMatchesDecoded(t *testing.T) {
	paths := []string{"../../examples/demo-session.jsonl"}
	if dir := testfixture.PiDir(); dir != "" {
		more, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		paths = append(paths, more...)
	}
	if n := previewed(t, paths...); n < 20 {
		t.Fatalf("only %d messages previewed", n)
	}
}

// TestPreviewEdges: messages whose preview depends on details — text
// after a break, a break with nothing after it, blank and empty parts,
// escapes, an error, fields of the wrong type, invalid UTF-8 — are
// previewed as decoding them does.
func TestPreviewEdges(t *testing.T) {
	long := strings.Repeat("word ", 40)
	for _, raw := range []string{
		`{"role":"user","content":"hello\nworld"}`,
		`{"role":"user","content":"hello\n"}`,
		`{"role":"user","content":"\n\n  hello"}`,
		`{"role":"user","content":"   "}`,
		`{"role":"user","content":""}`,
		`{"role":"user","content":"tab\there \u00e9 \ud83d\ude00"}`,
		`{"role":"user","content":"` + long + `"}`,
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b\nc"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"line\n"},{"type":"toolCall","id":"1","name":"read","arguments":{"path":"x"}}]}`,
		`{"role":"assistant","content":[{"type":"text","text":""},{"type":"text","text":""}]}`,
		`{"role":"assistant","content":[{"type":"text","text":""}],"errorMessage":"boom"}`,
		`{"role":"assistant","content":[],"errorMessage":"boom"}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"image","data":"x","mimeType":"image/png"}]}`,
		`{"role":"assistant","content":[{"type":"toolCall","name":"bash","arguments":null}]}`,
		`{"role":"assistant","content":[{"type":"text","text":5}]}`,
		`{"role":"assistant","content":[{"type":5}]}`,
		`{"role":"assistant","content":["x"]}`,
		`{"role":"assistant","content":{"type":"text"}}`,
		`{"role":"assistant","content":42}`,
		`{"role":"assistant","errorMessage":7}`,
		"{\"role\":\"user\",\"content\":\"bad \xff byte\"}", // a byte that is not UTF-8
		`{"role":"bashExecution","command":"ls -la\nrm x","output":"..."}`,
		`{"role":"bashExecution","command":5}`,
		`{"role":"compactionSummary","summary":"## Goal\n- x","tokensBefore":3}`,
		`{"role":"branchSummary","summary":null}`,
		`[1,2]`,
	} {
		m := session.Message{Raw: []byte(raw)}
		if r := strings.Index(raw, `"role":"`); r >= 0 {
			m.Role = raw[r+8 : r+8+strings.IndexByte(raw[r+8:], '"')]
		}
		for _, width := range []int{1, 5, 80} {
			if got, want := Preview(m, width), decodedPreview(m, width); got != want {
				t.Errorf("%s width %d: Preview %q, decoded %q", raw, width, got, want)
			}
		}
	}
}

// TestPreviewMatchesDecodedGenerated: the same on generated sessions of
// every profile: long tool outputs, tool calls with large arguments,
// branches and summaries.
func TestPreviewMatchesDecodedGenerated(t *testing.T) {
	var paths []string
	for i, name := range sessiongen.Profiles {
		opts, err := sessiongen.Profile(name, uint64(i+1), 1500)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), name+".jsonl")
		if err := sessiongen.GenerateFile(p, opts); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if n := previewed(t, paths...); n < 1000 {
		t.Fatalf("only %d messages previewed", n)
	}
}

// FuzzPreview: for any message a session can hold (a JSON object, its
// role as the parser reads it), the fast preview is the decoded one at
// any width. Seeded with TestPreviewEdges' shapes.
func FuzzPreview(f *testing.F) {
	for _, raw := range []string{
		`{"role":"user","content":"hello\nworld"}`,
		`{"role":"user","content":"tab\there \u00e9 \ud83d\ude00 \u0000 \"q\""}`,
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"toolCall","id":"1","name":"read","arguments":{"path":"x\n"}}]}`,
		`{"role":"assistant","content":[{"type":"text","text":""}],"errorMessage":"boom"}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"image","data":"x","mimeType":"image/png"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":5}]}`,
		`{"role":"bashExecution","command":"ls -la\nrm x","output":"..."}`,
		`{"role":"compactionSummary","summary":"## Goal\n- x","tokensBefore":3}`,
		`{"role":"toolResult","toolCallId":"1","content":[{"type":"text","text":"  \n x  y"}],"isError":false}`,
	} {
		f.Add([]byte(raw), 12)
	}
	f.Fuzz(func(t *testing.T, raw []byte, width int) {
		if width < 0 || width > 1000 {
			return
		}
		line := append([]byte(`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":`), raw...)
		line = append(line, '}')
		e, err := session.ParseEntry(line)
		if err != nil {
			return // not a line a session can hold
		}
		m, ok := session.EntryMessage(e)
		if !ok || !plainNames(raw) {
			return
		}
		// The preview trusts the types of the fields it does not show,
		// where decoding the whole message fails on any of them: compare
		// with the decoding of what it shows.
		shown := m
		shown.Raw = shownOnly(m.Role, m.Raw)
		if got, want := Preview(m, width), decodedPreview(shown, width); got != want {
			t.Fatalf("%s width %d: Preview %q, decoded %q", raw, width, got, want)
		}
	})
}

// shownOnly is the message object raw with only the members a preview
// shows for role, at the top level and in content blocks, each as raw as it was.
func shownOnly(role string, raw []byte) []byte {
	r := gjson.ParseBytes(raw)
	if !r.IsObject() {
		return raw
	}
	switch role {
	case session.RoleBashExecution:
		return keepMembers(r, []string{"command"})
	case session.RoleCompactionSummary, session.RoleBranchSummary:
		return keepMembers(r, []string{"summary"})
	}
	return keepMembers(r, []string{"content", "errorMessage"})
}

// keepMembers is obj with only the members named.
func keepMembers(obj gjson.Result, names []string) []byte {
	out := []byte{'{'}
	obj.ForEach(func(k, v gjson.Result) bool {
		if slices.Contains(names, k.Str) {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(append(append(out, k.Raw...), ':'), shownValue(k.Str, v)...)
		}
		return true
	})
	return append(out, '}')
}

// shownValue is a kept member's value: a content array with each block
// object reduced to what a preview shows of it.
func shownValue(name string, v gjson.Result) []byte {
	if name != "content" || !v.IsArray() {
		return []byte(v.Raw)
	}
	out := []byte{'['}
	v.ForEach(func(_, b gjson.Result) bool {
		if len(out) > 1 {
			out = append(out, ',')
		}
		if b.IsObject() {
			out = append(out, keepMembers(b, []string{"type", "text", "name", "arguments"})...)
		} else {
			out = append(out, b.Raw...)
		}
		return true
	})
	return append(out, ']')
}

// plainNames reports whether every object in raw names each member once
// and spells a known field's name as pi does. Where it does not, the
// reference itself is not pi's reading: encoding/json matches names
// case-insensitively ("errorMessAge" is errorMessage) and keeps the last
// of two members, while the fast path, as pi, reads names exactly (and
// keeps the first; pi the last). Both are messages no agent writes.
func plainNames(raw []byte) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowInvalidUTF8(true))
	var inObject []bool // per open container: an object, whose next string is a name
	expectName := false
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false // jsontext refuses a name given twice
		}
		switch tok.Kind() {
		case '{':
			inObject, expectName = append(inObject, true), true
			continue
		case '[':
			inObject, expectName = append(inObject, false), false
			continue
		case '}', ']':
			inObject = inObject[:len(inObject)-1]
		case '"':
			if expectName {
				n := tok.String()
				for _, known := range knownNames {
					if n != known && strings.EqualFold(n, known) {
						return false
					}
				}
				expectName = false
				continue
			}
		}
		expectName = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

// knownNames are the member names session.AgentMessage and
// session.ContentBlock decode.
var knownNames = func() []string {
	var out []string
	for _, v := range []any{session.AgentMessage{}, session.ContentBlock{}, session.Usage{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				out = append(out, name)
			}
		}
	}
	return out
}()
