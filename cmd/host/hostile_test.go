package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
)

// deepLine is 30 million open brackets: a recursive walk over it overflows
// the stack, which Go cannot recover.
var deepLine = strings.Repeat("[", 30_000_000)

// TestDeepFirstLine: a session whose first line nests 30 million deep is
// not a session — one line on stderr, exit 1 — for every command that
// reads one, and the file is left alone.
func TestDeepFirstLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep.jsonl")
	if err := os.WriteFile(path, []byte(deepLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"context", path}, {"tree", path}, {"migrate", path}, {"prune", path}, {"label", path, "x", "y"},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "pith: ") ||
			!strings.Contains(stderr, "nested deeper than 10000 levels") {
			t.Errorf("%s: exit %d, stderr %.300q", args[0], code, stderr)
		}
	}
	if st, _ := os.Stat(path); st.Size() != int64(len(deepLine)+1) {
		t.Error("a failed command changed the file")
	}
}

// TestDeepLaterLine: a later line nested 30 million deep is skipped with
// the usual warning and the rest of the session is read.
func TestDeepLaterLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep.jsonl")
	data := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n" +
		deepLine + "\n" +
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello"}}` + "\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "context", path, "--json")
	if code != 0 || !strings.Contains(stdout, `"messages":1`) {
		t.Fatalf("exit %d, stdout %q, stderr %.300q", code, stdout, stderr)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "[WARN]  pith: skipped a line of the session file: file=") ||
		!strings.Contains(stderr, " line=2 ") || !strings.Contains(stderr, "nested deeper than 10000 levels") {
		t.Errorf("want one warning for line 2, got %.300q", stderr)
	}
}

// TestServeDeepSession: pith serve's OpenSession on a session whose first
// line nests 30 million deep fails with one clear error, and the daemon
// keeps serving.
func TestServeDeepSession(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pith.json")
	writeServeConfig(t, cfg, 1200, nil)
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions", "deep.jsonl"), []byte(deepLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, cfg)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	_, err = c.Open(ctx, "deep.jsonl")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "nested deeper than 10000 levels") {
		t.Fatalf("OpenSession = %v, want one line naming the nesting limit", err)
	}
	if _, err := c.Create(ctx, "after.jsonl", "/work"); err != nil {
		t.Fatalf("the daemon stopped serving: %v", err)
	}
}

// TestParentCycle: a session whose entries' parentId links loop shows every
// entry in `pith tree` and says where the loop is, in tree and context.
func TestParentCycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cycle.jsonl")
	line := func(id, parent, text string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"` + text + `"}}` + "\n"
	}
	data := `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n" +
		line("a1", "c3", "one") + line("b2", "a1", "two") + line("c3", "b2", "three")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "tree", path)
	if code != 0 || !strings.Contains(stdout, "3 entries") || !strings.Contains(stdout, "a1") || !strings.Contains(stdout, "c3") {
		t.Errorf("tree: exit %d, stdout %q", code, stdout)
	}
	want := `[WARN]  pith: parentId cycle in the session file: file=` + path + ` line=2 reason="cycle at entry \"a1\"`
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("tree: stderr %q, want one line starting %q", stderr, want)
	}
	stdout, stderr, code = runCLI(t, "context", path, "--json")
	if code != 0 || !strings.Contains(stdout, `"messages":3`) {
		t.Errorf("context: exit %d, stdout %q", code, stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "parentId cycle") || !strings.Contains(stderr, "cycle at entry") {
		t.Errorf("context: stderr %q", stderr)
	}
}
