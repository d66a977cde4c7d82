package session_test

import (
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestMeasuredEstimate checks the estimate the scanner measures against
// tokens.Estimate on the shapes where the two readings could part: keys
// met twice (the first counts), the role after the content, content as a
// string, an object or neither, blocks with values that are not strings,
// escapes, astral characters and a message replaced by a later one.
func TestMeasuredEstimate(t *testing.T) {
	for _, m := range []string{
		`{"role":"user","content":"hello there, a few words"}`,
		`{"content":"role comes after the content","role":"user"}`,
		`{"role":"user","content":"first","content":"the second content does not count"}`,
		`{"role":"assistant","role":"user","content":"first role counts"}`,
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"x"},"str",3]}`,
		`{"role":"toolResult","content":[{"type":"text","text":"out\u00e9\ud83d\ude00"},{"type":"image","data":"x"}]}`,
		`{"role":"custom","content":"c\\n\\t"}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm 😀"},{"type":"text","text":"ok"},` +
			`{"type":"toolCall","name":"read","arguments":{"path":"a/b","n":1.50,"x":[1e3,"\u0041"]}}]}`,
		`{"role":"assistant","content":[{"text":"type after","type":"text"},{"type":"text","type":"thinking","text":"t"}]}`,
		`{"role":"assistant","content":[{"type":"toolCall","name":7,"arguments":"s"},{"type":"toolCall","arguments":null,"arguments":{"a":1}}]}`,
		`{"role":"assistant","content":[{"type":"text","text":5,"text":"later"}]}`,
		`{"role":"assistant","content":{"a":{"type":"text","text":"blocks as an object"}}}`,
		`{"role":"assistant","content":"a string for an assistant counts nothing"}`,
		`{"role":"bashExecution","command":"ls -la","output":"a\nb","output":"x","command":5}`,
		`{"role":"compactionSummary","summary":"s\u00e9"}`,
		`{"role":"branchSummary","summary":7}`,
		`{"r\u006fle":"user","c\u006fntent":"escaped keys"}`,
		`{"role":"us\u0065r","content":"an escaped role"}`,
		`{"role":5,"content":"no role"}`,
		`{"role":"hookMessage","content":"not counted"}`,
		`{"role":"user","content":null}`,
		`{}`,
	} {
		for _, line := range []string{
			`{"type":"message","id":"a","parentId":null,"message":` + m + `}`,
			`{"message":` + m + `,"type":"message","id":"a"}`,
			`{"type":"message","id":"a","message":{"role":"user","content":"replaced"},"message":` + m + `}`,
			`{"type":"message","id":"a","message":` + m + `,"message":"not an object"}`,
			`{"type":"custom","id":"a","message":` + m + `}`,
		} {
			e := measuredEntry(t, []byte(line))
			if e == nil {
				t.Fatalf("not an entry: %s", line)
			}
			if got, want := e.MessageTokens(), messageEstimate(e); got != want {
				t.Errorf("%s: MessageTokens %d, Estimate %d", line, got, want)
			}
		}
	}
}

// measuredEntry parses line as the one entry of a file read with
// estimates, or returns nil when it is not one.
func measuredEntry(t testing.TB, line []byte) *session.Entry {
	f, err := session.ParseWith(append([]byte(`{"type":"session","id":"s"}`+"\n"), line...), session.ParseOptions{Estimates: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != 1 {
		return nil
	}
	return f.Entries[0]
}
