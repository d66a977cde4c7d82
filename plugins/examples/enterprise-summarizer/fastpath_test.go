package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fast paths are checked against the way the plugin worked before
// them: every message decoded, redacted and re-encoded (redactor.json),
// then read for the prompt by the reference reader below, which decodes
// the content twice and shows tool arguments as the re-encoded JSON text.

func referenceBlocks(content json.RawMessage) []block {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(content, &bs)
	return bs
}

func referenceText(content json.RawMessage) string {
	var parts []string
	for _, b := range referenceBlocks(content) {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func referenceArguments(raw json.RawMessage) string {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return ""
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + string(args[k])
	}
	return strings.Join(parts, ", ")
}

func referenceSerialize(raw json.RawMessage) []string {
	var m message
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out []string
	add := func(label, text string) {
		if strings.TrimSpace(text) != "" {
			out = append(out, "["+label+"]: "+text)
		}
	}
	switch m.Role {
	case "user":
		add("User", referenceText(m.Content))
	case "custom":
		add("User", clip(referenceText(m.Content)))
	case "assistant":
		var thinking, text, calls []string
		for _, b := range referenceBlocks(m.Content) {
			switch b.Type {
			case "thinking":
				thinking = append(thinking, b.Thinking)
			case "text":
				text = append(text, b.Text)
			case "toolCall":
				calls = append(calls, b.Name+"("+referenceArguments(b.Arguments)+")")
			}
		}
		add("Assistant thinking", clip(strings.Join(thinking, "\n")))
		add("Assistant", strings.Join(text, "\n"))
		add("Assistant tool calls", strings.Join(calls, "; "))
	case "toolResult":
		add("Tool result", clip(referenceText(m.Content)))
	case "bashExecution":
		s := "Ran `" + m.Command + "`"
		if m.ExitCode != nil && *m.ExitCode != 0 {
			s += fmt.Sprintf(" (exit code %d)", *m.ExitCode)
		}
		if m.Output != "" {
			s += "\n" + clip(m.Output)
		}
		add("User", s)
	case "compactionSummary", "branchSummary":
		add("Summary of earlier work", m.Summary)
	}
	return out
}

// checkSameAsFullPath fails when the plugin's redaction and prompt blocks
// for the message raw differ from the full path's: the error, the counts
// and the text sent to the summarizer must be the same.
func checkSameAsFullPath(t *testing.T, raw []byte) {
	t.Helper()
	full := newRedactor()
	want, wantErr := full.json(raw)
	fast := newRedactor()
	got, gotErr := fast.message(raw)
	var blocks []string
	if gotErr == nil {
		blocks, gotErr = serializeMessage(got)
	}
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("message %q: full path error %v, fast path error %v", raw, wantErr, gotErr)
	}
	if !reflect.DeepEqual(full.counts, fast.counts) {
		t.Fatalf("message %q: full path counted %v, fast path %v", raw, full.counts, fast.counts)
	}
	if wantErr != nil {
		return
	}
	if w, g := referenceSerialize(want), blocks; !reflect.DeepEqual(w, g) {
		t.Fatalf("message %q (fast path: %v)\nfull path prompt %q\nfast path prompt %q", raw, !mayHoldSecret(raw), w, g)
	}
}

// FuzzFastPath: for any bytes given as a message, the plugin redacts,
// counts and prompts exactly as the full path. Seeds: the fixture, the
// demo session and a generated session's messages.
func FuzzFastPath(f *testing.F) {
	for _, m := range preparation().MessagesToSummarize {
		f.Add([]byte(m))
	}
	for _, m := range demoMessages(f) {
		f.Add([]byte(m))
	}
	gen, err := generatedMessages()
	if err != nil {
		f.Fatal(err)
	}
	for i, m := range gen {
		if i%20 == 0 && len(m) < 8<<10 {
			f.Add([]byte(m))
		}
	}
	for _, s := range []string{
		`{"role":"user","content":"https:\/\/u:p@h.io"}`,
		`{"role":"user","content":"\u0073k-abcdefghijklmnopqrstu"}`,
		`{"role":"user","content":"s\u006b-abcdefghijklmnopqrstu"}`,
		`{"role":"user","content":"a\u0040b.cc"}`,
		`{"role":"user","content":"Be\u0061rer abcdefghijklmnop"}`,
		`{"role":"user","content":"x\\u0040y.zz"}`,
		`{"role":"user","content":"ok"} trailing`,
		`{"role":"user","Role":"assistant","content":[{"type":"text","text":"a","Text":"b"}]}`,
		`{"role":"assistant","content":[{"type":"toolCall","name":"e","arguments":{"b":{"z":1,"a":"<&>"},"a":[1.0, 1e2,"\/"]}}]}`,
		`{"role":"toolResult","content":[{"type":"text","text":1},{"type":"text","text":"x"}]}`,
		`{"role":5,"role":"user","content":"x"}`,
		`{"role":"bashExecution","command":"ls","exitCode":"1","exitCode":2}`,
		"{\"role\":\"user\",\"content\":\"\xff\xfe\u2028\"}",
		` { "role" : "user" , "content" : [ { "type" : "text" , "text" : "spaced" } ] } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkSameAsFullPath)
}

// FuzzFastPathGenerated builds messages from the fuzzer's bytes: pi's
// message shapes, strings made of secret fragments and ordinary text, each
// character written plainly or escaped (\uXXXX in either case, \/, short
// escapes, surrogate pairs, lone surrogates), keys in other letter cases
// or repeated, spaces between tokens, tool arguments with nested objects
// and odd numbers, now and then invalid UTF-8, trailing data or a cut.
func FuzzFastPathGenerated(f *testing.F) {
	for _, s := range []string{"", "\x00", "\x01\x02\x03", "secret!", "\xff\x10\x20\x30\x40\x50\x60\x70\x80\x90", strings.Repeat("\x07\x13", 40)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSameAsFullPath(t, generateMessage(&chooser{b: data}))
	})
}

type chooser struct {
	b []byte
	i int
}

// n is a choice in [0, k): the next byte of the input, 0 when it runs out.
func (c *chooser) n(k int) int {
	if c.i >= len(c.b) {
		return 0
	}
	v := int(c.b[c.i]) % k
	c.i++
	return v
}

// secretFragments are pieces of secrets and of the literals the
// prefilters look for; plainFragments are the rest of a conversation.
var (
	secretFragments = []string{
		"sk-", "proj-AbCdEf0123456789xyzXYZ", "AKIA", "IOSFODNN7EXAMPLE", "ghp_", "0123456789abcdefghijABCDEFGHIJ0123",
		"github_pat_", "xoxb-", "123456789012-abcdef", "Bearer ", "bEaReR\t", "tok3nTok3nTok3nTok3n", "eyJ", "hbGciOiJIUzI1NiJ9",
		".", "@", "jane", "example.com", "://", "https", "u:p", "-----BEGIN RSA PRIVATE KEY-----\n", "MIIEow",
		"-----END RSA PRIVATE KEY-----", "s", "k", "-", "x", "o", "e", "y", "J",
	}
	plainFragments = []string{
		"hello ", "world", " ", "\n", "\t", "<", ">", "&", "/", "\\", "\"", "é", "日本", "😀", "\u2028", "\x01", "\x1b[0m",
		"task-list", "through", "_", "K", "ſ", "Hmm", "go test ./...", "func main() {}", "a := &b", "x <- ch", "{\"k\": [1, 2]}",
	}
)

func generateMessage(c *chooser) []byte {
	var b []byte
	ws := func() {
		if c.n(4) == 3 {
			b = append(b, " \n\t\r"[c.n(4)])
		}
	}
	str := func() {
		var s strings.Builder
		for range c.n(5) {
			if c.n(3) == 2 {
				s.WriteString(secretFragments[c.n(len(secretFragments))])
			} else {
				s.WriteString(plainFragments[c.n(len(plainFragments))])
			}
		}
		b = appendEscaped(b, c, s.String())
	}
	key := func(name string) {
		switch c.n(12) {
		case 10:
			name = strings.ToUpper(name[:1]) + name[1:]
		case 11:
			name = strings.ToUpper(name)
		}
		ws()
		b = appendEscaped(b, c, name)
		ws()
		b = append(b, ':')
		ws()
	}
	var value func(depth int)
	value = func(depth int) {
		switch k := c.n(8); {
		case k < 3 || depth > 2:
			str()
		case k == 3:
			b = append(b, []string{"1.0", "1e2", "-0", "12345678901234567890", "0", "7", "-3.5E-2"}[c.n(7)]...)
		case k == 4:
			b = append(b, []string{"true", "false", "null"}[c.n(3)]...)
		case k == 5:
			b = append(b, '[')
			for i := range c.n(3) {
				if i > 0 {
					b = append(b, ',')
				}
				ws()
				value(depth + 1)
			}
			b = append(b, ']')
		default:
			b = append(b, '{')
			for i := range c.n(4) {
				if i > 0 {
					b = append(b, ',')
				}
				key([]string{"z", "a", "path", "old<", "1", "10", "2"}[c.n(7)])
				value(depth + 1)
			}
			b = append(b, '}')
		}
	}
	object := func(fields []string, member func(name string)) {
		b = append(b, '{')
		for i := range 1 + c.n(6) {
			if i > 0 {
				b = append(b, ',')
			}
			name := fields[c.n(len(fields))]
			key(name)
			member(name)
		}
		ws()
		b = append(b, '}')
	}
	blockMember := func(name string) {
		switch name {
		case "type":
			b = appendEscaped(b, c, []string{"text", "thinking", "toolCall", "image", "text"}[c.n(5)])
		case "arguments":
			value(0)
		default:
			if c.n(10) == 0 {
				value(0)
			} else {
				str()
			}
		}
	}
	messageMember := func(name string) {
		switch name {
		case "role":
			b = appendEscaped(b, c, []string{"user", "assistant", "toolResult", "custom", "bashExecution", "branchSummary", "other"}[c.n(7)])
		case "content":
			if c.n(3) == 0 {
				str()
				return
			}
			b = append(b, '[')
			for i := range c.n(4) {
				if i > 0 {
					b = append(b, ',')
				}
				ws()
				object([]string{"type", "text", "thinking", "name", "arguments", "id"}, blockMember)
			}
			b = append(b, ']')
		case "exitCode":
			value(2)
		default:
			if c.n(10) == 0 {
				value(0)
			} else {
				str()
			}
		}
	}
	ws()
	object([]string{"role", "content", "content", "summary", "command", "output", "exitCode", "details", "role"}, messageMember)
	ws()
	switch c.n(16) {
	case 14:
		b = append(b, " x"...)
	case 15:
		b = b[:len(b)/2]
	}
	return b
}

// appendEscaped writes s as a JSON string, each character plainly or
// escaped as the chooser says; now and then a lone surrogate or an
// invalid UTF-8 byte.
func appendEscaped(b []byte, c *chooser, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch k := c.n(24); {
		case (r == '"' || r == '\\' || r == '\n' || r == '\t' || r == '\b') && k < 12:
			b = append(b, '\\', map[rune]byte{'"': '"', '\\': '\\', '\n': 'n', '\t': 't', '\b': 'b'}[r])
		case r == '"' || r == '\\' || r < 0x20 || k == 1:
			b = appendU(b, r, c.n(2) == 0)
		case k == 2 && r == '/':
			b = append(b, '\\', '/')
		case k == 3 && c.n(8) == 7:
			b = append(b, []string{`\ud800`, "\xff", `\udc00`}[c.n(3)]...)
			b = utf8.AppendRune(b, r)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

func appendU(b []byte, r rune, upper bool) []byte {
	format := "\\u%04x"
	if upper {
		format = "\\u%04X"
	}
	if r >= 0x10000 {
		r -= 0x10000
		return fmt.Appendf(b, format+format, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
	}
	return fmt.Appendf(b, format, r)
}

// FuzzClip: clipping walks the runes of the head only, and gives what the
// conversion of the whole string to runes gave.
func FuzzClip(f *testing.F) {
	f.Add(strings.Repeat("é", clipChars+3), 0)
	f.Add(strings.Repeat("a\xff", clipChars), 7)
	f.Fuzz(func(t *testing.T, s string, pad int) {
		s = strings.Repeat("x", max(0, min(pad, 2*clipChars))) + s
		want := s
		if n := utf8.RuneCountInString(s); n > clipChars {
			want = string([]rune(s)[:clipChars]) + fmt.Sprintf("\n\n[... %d more characters truncated]", n-clipChars)
		}
		if got := clip(s); got != want {
			t.Fatalf("clip(%q) = %q, want %q", s, got, want)
		}
	})
}
