package entryview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/internal/testfixture"
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
