package branch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/store/files"
)

// treeLines is a small session with three branches off a1:
//
//	u1 ─ a1 ─┬─ u2 ─ a2 ─ r2      (branch A: read x.go, edit y.go)
//	         ├─ cm                 (branch B: a custom_message)
//	         └─ u3 ─ a3            (branch C, the leaf: write z.go)
var treeLines = []string{
	`{"type":"session","version":3,"id":"0b5e8c1a-1111-4222-8333-944445555666","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/repo"}`,
	`{"type":"message","id":"000000u1","parentId":null,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":"hello","timestamp":1}}`,
	`{"type":"message","id":"000000a1","parentId":"000000u1","timestamp":"2026-01-02T03:04:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi, what next?"}],"provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15},"stopReason":"stop","timestamp":2}}`,
	`{"type":"message","id":"000000u2","parentId":"000000a1","timestamp":"2026-01-02T03:04:08.000Z","message":{"role":"user","content":"first attempt","timestamp":3}}`,
	`{"type":"message","id":"000000a2","parentId":"000000u2","timestamp":"2026-01-02T03:04:09.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"/repo/x.go"}},{"type":"toolCall","id":"c2","name":"edit","arguments":{"path":"/repo/y.go","old":"a","new":"b"}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":4}}`,
	`{"type":"message","id":"000000r2","parentId":"000000a2","timestamp":"2026-01-02T03:04:10.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"package x"}],"isError":false,"timestamp":5}}`,
	`{"type":"custom_message","id":"000000cm","parentId":"000000a1","timestamp":"2026-01-02T03:04:11.000Z","customType":"note","content":[{"type":"text","text":"custom "},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"text"}],"display":true}`,
	`{"type":"message","id":"000000u3","parentId":"000000a1","timestamp":"2026-01-02T03:04:12.000Z","message":{"role":"user","content":[{"type":"text","text":"second "},{"type":"text","text":"attempt"}],"timestamp":6}}`,
	`{"type":"message","id":"000000a3","parentId":"000000u3","timestamp":"2026-01-02T03:04:13.000Z","message":{"role":"assistant","content":[{"type":"text","text":"writing it"},{"type":"toolCall","id":"c3","name":"write","arguments":{"path":"/repo/z.go","content":"package z"}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":7}}`,
}

// writeSession writes lines as a session file in a fresh temp dir.
func writeSession(t testing.TB, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func openStore(t testing.TB, path string) *files.Session {
	t.Helper()
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// contextOf is the roles and raw JSON of the context at leafID, for
// comparing two contexts.
func contextOf(tree *session.Tree, leafID string) []string {
	var out []string
	for _, m := range tree.BuildContext(leafID).Messages {
		out = append(out, m.Role+" "+string(m.Raw))
	}
	return out
}

// fixedSummarizer answers every request with text and records it.
type fixedSummarizer struct {
	text   string
	finish summary.FinishReason
	reqs   []summary.Request
}

func (f *fixedSummarizer) Summarize(_ context.Context, req summary.Request) (summary.Result, error) {
	f.reqs = append(f.reqs, req)
	finish := f.finish
	if finish == "" {
		finish = summary.FinishStop
	}
	return summary.Result{Text: f.text, FinishReason: finish}, nil
}

// failingSummarizer fails the test when called.
func failingSummarizer(t *testing.T) summary.Summarizer {
	return summary.Func(func(context.Context, summary.Request) (summary.Result, error) {
		t.Error("the summarizer was called")
		return summary.Result{}, context.Canceled
	})
}

func sameBytes(t *testing.T, path string, before []byte) {
	t.Helper()
	if after := readFile(t, path); !bytes.Equal(after, before) {
		t.Errorf("the session file changed:\n%s", after[len(before):])
	}
}

// copyGenerated copies testdata/generated/<file> into a fresh temp dir.
func copyGenerated(t testing.TB, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "generated", file))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// leafID is the store's leaf id, "" for none.
func leafID(s *files.Session) string {
	if l := s.Leaf(); l != nil {
		return l.ID
	}
	return ""
}
