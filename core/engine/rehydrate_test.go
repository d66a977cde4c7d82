package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
	"github.com/tidwall/gjson"
)

// rehydrateSession writes, in a session whose cwd is a fresh workspace, a
// turn that reads and edits files — small ones, one over the per-file cap,
// one outside the workspace, a symlink leading out — then a later turn,
// so that a compaction summarizes the file work.
func rehydrateSession(t *testing.T) (*files.Session, string, string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "a.go"), "package a\n")
	write(filepath.Join(ws, "b.go"), "package b // current content, written after the session\n")
	write(filepath.Join(ws, "big.go"), strings.Repeat("// filler line of the big file\n", 200))
	write(filepath.Join(dir, "secret.txt"), "TOP SECRET\n")
	if err := os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(ws, "link.go")); err != nil {
		t.Skipf("symlink: %v", err)
	}
	path := filepath.Join(dir, "s.jsonl")
	st, err := files.Create(path, ws, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	add := func(m string) {
		if _, err := st.Append(session.Draft{Type: session.TypeMessage, Fields: json.RawMessage(`{"message":` + m + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	add(string(userMsg("Fix the package names.")))
	for i, c := range []struct{ tool, path string }{
		{"read", "a.go"}, {"edit", "b.go"}, {"read", "big.go"}, {"read", "../secret.txt"}, {"read", "link.go"}, {"read", ws + "/a.go"},
	} {
		id := fmt.Sprintf("c%d", i)
		add(fmt.Sprintf(`{"role":"assistant","content":[{"type":"toolCall","id":%q,"name":%q,"arguments":{"path":%q}}],"provider":"p","model":"m","stopReason":"toolUse"}`, id, c.tool, c.path))
		add(fmt.Sprintf(`{"role":"toolResult","toolCallId":%q,"toolName":%q,"content":[{"type":"text","text":%q}],"isError":false}`, id, c.tool, prose(i, 800)))
	}
	add(string(assistantMsg("Done with the names.", 3000, 20)))
	add(string(userMsg(prose(99, 1600))))
	add(string(assistantMsg(prose(98, 1600), 4000, 400)))
	return st, path, ws
}

// TestRehydrateAfterCompaction: with compaction.rehydrate on, the entry
// after the compaction is one custom_message with the current content of
// the recent files that fit; the file over the per-file cap, the one
// outside the workspace and the symlink leading out come back as paths
// only; the message is in the rebuilt context right after the summary.
func TestRehydrateAfterCompaction(t *testing.T) {
	store, path, _ := rehydrateSession(t)
	st := testSettings()
	st.Rehydrate = Rehydrate{Files: 10, MaxTokensPerFile: 100, TotalTokens: 1000}
	s := New(store, Options{Summarizer: offline(), Settings: st})
	res, err := s.Compact(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	f, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	last := f.Entries[len(f.Entries)-1]
	if last.Type != session.TypeCustomMessage || last.ParentID != res.Entry.ID || last.Get("customType").Str != RehydrateCustomType {
		t.Fatalf("entry after the compaction: %s", last.Raw)
	}
	text := last.Get("content").Str
	for _, want := range []string{
		"<file path=\"a.go\">\npackage a\n</file>",
		"<file path=\"b.go\">\npackage b // current content, written after the session\n</file>",
		"- big.go (over the per-file cap)",
		"- ../secret.txt (path is outside the workspace)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("message lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "TOP SECRET") || !strings.Contains(text, "- link.go (") {
		t.Errorf("the symlink leading out was followed or not listed:\n%s", text)
	}
	if strings.Count(text, "<file path=\"a.go\">") != 1 {
		t.Errorf("a.go (also named by its absolute path) came back twice:\n%s", text)
	}
	var files []struct {
		Path     string
		Included bool
	}
	json.Unmarshal([]byte(last.Get("details.files").Raw), &files)
	if len(files) != 5 {
		t.Errorf("details.files %s", last.Get("details.files").Raw)
	}

	msgs := s.Messages()
	if len(msgs) < 2 || msgs[0].Role != session.RoleCompactionSummary {
		t.Fatalf("live context starts with %v", msgs[0].Role)
	}
	if m := msgs[len(msgs)-1]; m.Role != session.RoleCustom || !strings.Contains(string(m.Raw), "package a") {
		t.Errorf("the rehydrated files are not the last live message: %.200s", m.Raw)
	}
}

// TestRehydrateOffAndLimits: off by default; files bounds how many come
// back, newest first; a total budget leaves the rest as paths.
func TestRehydrateOffAndLimits(t *testing.T) {
	store, path, _ := rehydrateSession(t)
	s := New(store, Options{Summarizer: offline(), Settings: testSettings()})
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	f, _ := session.Load(path)
	if last := f.Entries[len(f.Entries)-1]; last.Type != session.TypeCompaction {
		t.Fatalf("rehydrated with rehydrate off: %s", last.Raw)
	}

	msgs := []session.Message{}
	for _, p := range []string{"a.go", "b.go", "c.go", "a.go", "d.go"} {
		m, _ := session.EntryMessage(mustEntry(t, fmt.Sprintf(`{"role":"assistant","content":[{"type":"toolCall","id":"x","name":"read","arguments":{"path":%q}}]}`, p)))
		msgs = append(msgs, m)
	}
	if got := recentFiles(msgs, 3); !slices.Equal(got, []string{"d.go", "a.go", "c.go"}) {
		t.Errorf("recentFiles: %v", got)
	}

	store, path, _ = rehydrateSession(t)
	st := testSettings()
	st.Rehydrate = Rehydrate{Files: 2, MaxTokensPerFile: 100, TotalTokens: 1000}
	s = New(store, Options{Summarizer: offline(), Settings: st})
	if _, err := s.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	f, _ = session.Load(path)
	last := f.Entries[len(f.Entries)-1]
	if n := len(gjson.Get(last.Get("details").Raw, "files").Array()); n != 2 {
		t.Errorf("files: 2 gave %d files: %s", n, last.Get("details").Raw)
	}
}

func mustEntry(t *testing.T, msg string) *session.Entry {
	t.Helper()
	e, err := session.ParseEntry([]byte(`{"type":"message","id":"0000000a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":` + msg + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return e
}
