package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pith-dev/pith/internal/testproc"
	"github.com/pith-dev/pith/sdk/sdktest"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// hostileText sets a window title, clears the screen, hides a NUL and a
// carriage return, starts an 8-bit CSI (C1) and reverses what follows
// (bidi override, isolate), with a zero-width space and a DEL.
const hostileText = "\x1b]0;owned\x07\x1b[2J\x00\rgone\u009b31m\u202etxt.exe\u2066x\u200b\x7f"

// rawControls lists what a terminal could act on in out: C0 controls but
// newline and tab, DEL, C1, bidi controls, invisible format characters
// and bytes that are not UTF-8. Written independently of termsafe, so
// the test does not grade the escaper by itself.
func rawControls(out string) []string {
	var found []string
	for i, r := range out {
		bad := false
		switch {
		case r == utf8.RuneError:
			_, size := utf8.DecodeRuneInString(out[i:])
			bad = size == 1
		case r == '\n', r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			bad = true
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200b, r == 0x200e, r == 0x200f, r == 0xfeff, r == 0x061c:
			bad = true
		}
		if bad {
			lo, hi := max(0, i-20), min(len(out), i+20)
			found = append(found, strings.ToValidUTF8(out[lo:hi], "?"))
		}
	}
	return found
}

func requireNoRawControls(t *testing.T, what, out string) {
	t.Helper()
	if found := rawControls(out); len(found) > 0 {
		t.Errorf("%s holds %d raw control characters, around %q", what, len(found), found)
	}
}

// hostileSession is the demo session with hostileText in a user message,
// the model id, the last entry's id and a label.
func hostileSession(t *testing.T) string {
	t.Helper()
	path := copyFile(t, "../../examples/demo-session.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	f.Close()
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	set := func(i int, key string, v any) {
		s, err := sjson.Set(lines[i], key, v)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = s
	}
	firstUser := -1
	for i, l := range lines {
		switch {
		case gjson.Get(l, "type").String() == "model_change":
			set(i, "modelId", "claude"+hostileText)
		case gjson.Get(l, "message.role").String() == "assistant":
			set(i, "message.model", "claude"+hostileText)
		case firstUser < 0 && gjson.Get(l, "message.role").String() == "user":
			firstUser = i
			set(i, "message.content.0.text", hostileText+" "+gjson.Get(l, "message.content.0.text").String())
		}
	}
	last := len(lines) - 1
	lastID := "9b22" + hostileText
	set(last, "id", lastID)
	label, _ := sjson.Set(`{"type":"label","id":"lab00001","timestamp":"2026-11-02T09:29:00.000Z"}`, "parentId", lastID)
	label, _ = sjson.Set(label, "targetId", gjson.Get(lines[firstUser], "id").String())
	label, _ = sjson.Set(label, "label", "tag"+hostileText)
	lines = append(lines, label)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTerminalOutputEscapesControls: session text and plugin messages that
// hold escape sequences, NUL, C1 and bidi controls reach the terminal
// escaped in tree, context, compact, navigate and in the error line, and
// their --json output still carries them exactly (encoding/json escapes
// them itself).
func TestTerminalOutputEscapesControls(t *testing.T) {
	path := hostileSession(t)

	out, stderr, code := runCLI(t, "tree", path)
	if code != 0 {
		t.Fatalf("tree: exit %d: %s", code, stderr)
	}
	requireNoRawControls(t, "tree", out+stderr)
	if !strings.Contains(out, `9b22\x1b]0;owned\x07\x1b[2J\x00\x0dgone\u009b31m\u202etxt.exe\u2066x\u200b\x7f`) {
		t.Errorf("tree does not show the escaped id:\n%s", out)
	}

	out, stderr, code = runCLI(t, "tree", path, "--json")
	if code != 0 {
		t.Fatalf("tree --json: exit %d: %s", code, stderr)
	}
	var tree struct {
		Entries []struct {
			ID     string   `json:"id"`
			Labels []string `json:"labels"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		t.Fatal(err)
	}
	want := hostileText
	labelled, named := false, false
	for _, e := range tree.Entries {
		labelled = labelled || len(e.Labels) == 1 && e.Labels[0] == "tag"+want
		named = named || e.ID == "9b22"+want
	}
	if !labelled || !named {
		t.Errorf("tree --json lacks the raw label (%v) or id (%v):\n%s", labelled, named, out)
	}

	out, stderr, code = runCLI(t, "context", path)
	if code != 0 {
		t.Fatalf("context: exit %d: %s", code, stderr)
	}
	requireNoRawControls(t, "context", out+stderr)
	out, _, _ = runCLI(t, "context", path, "--json")
	if m := gjson.Get(out, "model.modelId").String(); m != "claude"+want {
		t.Errorf("context --json model id %q, want the raw one", m)
	}

	// A plugin that logs hostileText every way it can, then compaction
	// with the built-in summarizer, whose summary quotes the user.
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "pt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	talker := writeConfig(t, map[string]any{"name": "talker", "path": bin, "events": []string{"session_before_compact"},
		"args": []string{"-before-compact", "none", "-say", strconv.Quote(hostileText)}})
	out, stderr, code = runCLI(t, "compact", "-v", "--config", talker, "--keep-recent-tokens", "2000", path)
	if code != 0 {
		t.Fatalf("compact: exit %d: %s", code, stderr)
	}
	requireNoRawControls(t, "compact", out+stderr)
	if n := strings.Count(stderr, `\x1b]0;owned`); n < 4 {
		t.Errorf("the plugin's %d messages are not all in the log (escaped):\n%s", n, stderr)
	}
	if !strings.Contains(out, `\x1b]0;owned`) {
		t.Errorf("the summary does not quote the user's message (escaped); the test proves nothing:\n%s", out)
	}

	// A veto whose reason is hostile: the one error line is escaped.
	veto := writeConfig(t, map[string]any{"name": "veto", "path": bin, "events": []string{"session_before_compact"},
		"args": []string{"-before-compact", "cancel", "-say", strconv.Quote(hostileText)}})
	_, stderr, code = runCLI(t, "compact", "--config", veto, "--keep-recent-tokens", "2000", hostileSession(t))
	if code == 0 {
		t.Fatal("the veto did not stop the compaction")
	}
	requireNoRawControls(t, "compact's error", stderr)
	if !strings.Contains(stderr, `says no\x1b]0;owned`) {
		t.Errorf("the error line lacks the reason:\n%s", stderr)
	}

	// Back to the user message: its text, to edit and send again.
	first := gjson.Get(runTreeJSON(t, path), `entries.#(role=="user").id`).String()
	out, stderr, code = runCLI(t, "navigate", path, "--to", first)
	if code != 0 {
		t.Fatalf("navigate: exit %d: %s", code, stderr)
	}
	requireNoRawControls(t, "navigate", out+stderr)
	if !strings.Contains(out, `\x1b]0;owned`) {
		t.Errorf("navigate does not show the message to edit (escaped):\n%s", out)
	}
	testproc.RequireNoChildren(t)
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %d files", len(left))
	}
}

func runTreeJSON(t *testing.T, path string) string {
	t.Helper()
	out, stderr, code := runCLI(t, "tree", path, "--json")
	if code != 0 {
		t.Fatalf("tree --json: exit %d: %s", code, stderr)
	}
	return out
}
