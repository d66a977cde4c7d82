package files_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// A kill -9 can cut a write() of a line longer than a page short (Linux
// copies it page by page and stops at a pending fatal signal). These tests
// leave a file as such a kill would — the intent recorded, a piece of the
// line written — and check what the next Pith write does with it.

// tornLine is a line of several pages, like a compaction summary.
func tornLine() []byte {
	return []byte(`{"type":"custom","id":"deadbeef","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"big","data":"` +
		strings.Repeat("x", 20000) + `"}` + "\n")
}

func warnLog() (hclog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return hclog.New(&hclog.LoggerOptions{Name: "pith", Level: hclog.Warn, Output: &buf, DisableTime: true}), &buf
}

// onlyWholeLinesAfter checks that got is orig followed by n whole lines
// that parse as entries.
func onlyWholeLinesAfter(t *testing.T, got, orig []byte, n int) {
	t.Helper()
	if !bytes.HasPrefix(got, orig) {
		t.Fatalf("the original content changed:\n%q", got)
	}
	rest := got[len(orig):]
	lines := bytes.SplitAfter(rest, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != n {
		t.Fatalf("%d lines after the original, want %d: %q", len(lines), n, rest)
	}
	for _, l := range lines {
		if _, err := session.ParseEntry(bytes.TrimSuffix(l, []byte("\n"))); err != nil || !bytes.HasSuffix(l, []byte("\n")) {
			t.Fatalf("not a whole entry line (%v): %.200q", err, l)
		}
	}
}

func TestTornAppendUndoneOnNextAppend(t *testing.T) {
	path := newSession(t, t.TempDir(), 5)
	orig := mustRead(t, path)
	if err := files.SimulateTornAppend(path, tornLine(), 8192); err != nil {
		t.Fatal(err)
	}
	log, out := warnLog()
	s, err := files.Open(path, files.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "next"}}); err != nil {
		t.Fatal(err)
	}
	onlyWholeLinesAfter(t, mustRead(t, path), orig, 1)
	if !strings.Contains(out.String(), "an append interrupted by a crash in the session file") || !strings.Contains(out.String(), "undone") {
		t.Fatalf("no warning about the undone write:\n%s", out)
	}
	// The intent is cleared: the next write warns no more.
	out.Reset()
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "again"}}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("warned again:\n%s", out)
	}
	onlyWholeLinesAfter(t, mustRead(t, path), orig, 2)
}

func TestTornAppendUndoneOnNextRewrite(t *testing.T) {
	path := newSession(t, t.TempDir(), 5)
	orig := mustRead(t, path)
	if err := files.SimulateTornAppend(path, tornLine(), 4096); err != nil {
		t.Fatal(err)
	}
	log, out := warnLog()
	s, err := files.Open(path, files.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := rewriteSame(s); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); !bytes.Equal(got, orig) {
		t.Fatalf("after the rewrite:\n%.300q\nwant the original:\n%.300q", got, orig)
	}
	if !strings.Contains(out.String(), "undone") {
		t.Fatalf("no warning about the undone write:\n%s", out)
	}
}

// A line pi appended after the piece is glued to it; cutting back would
// lose pi's line, so the file is left as it is and the next append fences
// the glued line off.
func TestTornAppendWithLineAfterIsKept(t *testing.T) {
	path := newSession(t, t.TempDir(), 5)
	if err := files.SimulateTornAppend(path, tornLine(), 8192); err != nil {
		t.Fatal(err)
	}
	piAppend(t, path, "0000aaaa")
	before := mustRead(t, path)
	log, out := warnLog()
	s, err := files.Open(path, files.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "next"}}); err != nil {
		t.Fatal(err)
	}
	onlyWholeLinesAfter(t, mustRead(t, path), before, 1)
	if !strings.Contains(out.String(), "left in place") {
		t.Fatalf("no warning about the piece left in place:\n%s", out)
	}
}

// A record for a file that has been replaced since names another inode:
// it is dropped, and the file's unfinished end is fenced as before.
func TestStaleAppendIntentIgnored(t *testing.T) {
	dir := t.TempDir()
	path := newSession(t, dir, 3)
	if err := files.SimulateTornAppend(path, tornLine(), 4096); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy")
	if err := os.WriteFile(copyPath, mustRead(t, path), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(copyPath, path); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, path)
	log, out := warnLog()
	s, err := files.Open(path, files.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "next"}}); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); !bytes.HasPrefix(got, before) {
		t.Fatal("a stale intent cut the file")
	}
	if strings.Contains(out.String(), "interrupted") {
		t.Fatalf("warned about a stale intent:\n%s", out)
	}
}

// A kill after the write but before the record was cleared leaves a
// record of a whole write: nothing to undo, nothing to say.
func TestFinishedAppendIntentIgnored(t *testing.T) {
	path := newSession(t, t.TempDir(), 3)
	line := tornLine()
	if err := files.SimulateTornAppend(path, line, len(line)); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, path)
	log, out := warnLog()
	s, err := files.Open(path, files.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "next"}}); err != nil {
		t.Fatal(err)
	}
	onlyWholeLinesAfter(t, mustRead(t, path), before, 1)
	if out.Len() != 0 {
		t.Fatalf("warned about a finished write:\n%s", out)
	}
}
