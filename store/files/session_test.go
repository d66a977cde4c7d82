package files_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/store/files"
)

func TestMain(m *testing.M) {
	// Re-executed as a child by TestTwoProcessesAppend.
	if path := os.Getenv("PITH_TEST_APPEND_FILE"); path != "" {
		n, _ := strconv.Atoi(os.Getenv("PITH_TEST_APPEND_N"))
		if err := appendMany(path, os.Getenv("PITH_TEST_APPEND_TAG"), n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Re-executed as a child by TestKilledHugeAppendIsUndone.
	if path := os.Getenv(envHugeAppend); path != "" {
		os.Exit(hugeAppend(path))
	}
	code := m.Run()
	sessiongen.RemoveShared()
	os.Exit(code)
}

func appendMany(path, tag string, n int) error {
	s, err := files.OpenOrCreate(path, "/tmp", files.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	for i := 0; i < n; i++ {
		_, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{
			"customType": "test", "data": map[string]any{"tag": tag, "i": i, "pad": strings.Repeat("x", i%300)},
		}})
		if err != nil {
			return err
		}
	}
	return nil
}

// TestTwoProcessesAppend: two processes append 10 000 entries each to one
// file; every line is intact, every id unique, nothing is lost.
func TestTwoProcessesAppend(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	s, err := files.Create(path, "/tmp", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var cmds []*exec.Cmd
	for _, tag := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PITH_TEST_APPEND_FILE="+path, "PITH_TEST_APPEND_TAG="+tag, "PITH_TEST_APPEND_N="+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Warnings) > 0 {
		t.Fatalf("damaged lines: %v", f.Warnings[:min(3, len(f.Warnings))])
	}
	seen := map[string]int{}
	ids := map[string]bool{}
	for _, e := range f.Entries {
		if ids[e.ID] {
			t.Fatalf("duplicate id %s", e.ID)
		}
		ids[e.ID] = true
		var d struct {
			Tag string `json:"tag"`
			I   int    `json:"i"`
		}
		if err := json.Unmarshal([]byte(e.Get("data").Raw), &d); err != nil {
			t.Fatal(err)
		}
		if d.I != seen[d.Tag] {
			t.Fatalf("writer %s: entry %d where %d was expected", d.Tag, d.I, seen[d.Tag])
		}
		seen[d.Tag]++
	}
	if seen["a"] != n || seen["b"] != n {
		t.Fatalf("got %v, want %d each", seen, n)
	}
}

func TestMalformedAndTornLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	content := `{"type":"session","version":3,"id":"abc","timestamp":"t","cwd":"/"}
{"type":"message","id":"00000001","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}
not json at all
{"type":"message","id":"00000002","parentId":"00000001","timestamp":"t","message":{"role":"user","content":"again"}}
[1,2]
{"type":"message","id":"00000003","parentId":"00000002","timestamp":"t","mess`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	warned := func(f *session.File) string {
		var lines []int
		for _, w := range f.Warnings {
			lines = append(lines, w.Line)
		}
		return fmt.Sprint(lines)
	}
	loaded, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := warned(loaded); got != "[3 5 6]" {
		t.Fatalf("Load: warnings on lines %s (%v)", got, loaded.Warnings)
	}
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := s.File()
	if len(f.Entries) != 2 {
		t.Fatalf("entries = %d", len(f.Entries))
	}
	// A Store leaves an unfinished last line unread: it may be pi's
	// append caught halfway.
	if got := warned(f); got != "[3 5]" || !f.TornTail {
		t.Fatalf("Store: warnings on lines %s (%v), torn tail %v", got, f.Warnings, f.TornTail)
	}
	// Appending after a torn line starts a fresh line.
	if _, err := s.Append(session.Draft{Type: session.TypeLabel, Fields: map[string]any{"targetId": "00000001", "label": "x"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	f2, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f2.Entries) != 3 || f2.Entries[2].Type != session.TypeLabel || f2.Entries[2].ParentID != "00000002" {
		t.Fatalf("after append: %d entries", len(f2.Entries))
	}
	// A rewrite keeps the skipped lines where they were, and the mode.
	if err := files.WriteAtomic(path, f2.Encode); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte("\nnot json at all\n")) || !bytes.Contains(data, []byte("\n[1,2]\n")) {
		t.Fatalf("skipped lines lost:\n%s", data)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v", st.Mode())
	}
}

func TestNotASession(t *testing.T) {
	for name, content := range map[string]string{
		"empty":     "",
		"no header": `{"type":"message","id":"1"}` + "\n",
		"no id":     `{"type":"session","version":3}` + "\n",
		"garbage":   "hello\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			os.WriteFile(path, []byte(content), 0o644)
			_, err := files.Open(path, files.Options{})
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestTreeAndContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	s, err := files.Create(path, "/w", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msg := func(role, text string) session.Draft {
		return session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": role, "content": text}}}
	}
	a, _ := s.Append(msg("user", "one"))
	b, _ := s.Append(msg("assistant", "two"))
	// Branch back to a and continue elsewhere.
	if err := s.SetLeaf(a[0].ID); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Append(msg("assistant", "three"), msg("user", "four"))
	tree := s.Tree()
	if got := tree.CommonAncestor(b[0], c[1]); got != a[0] {
		t.Fatalf("common ancestor = %v", got)
	}
	if n := len(tree.Children(a[0].ID)); n != 2 {
		t.Fatalf("children = %d", n)
	}
	ctx := tree.BuildContext(session.LeafDefault)
	if len(ctx.Messages) != 3 || ctx.Messages[1].EntryID != c[0].ID {
		t.Fatalf("context %+v", ctx.Messages)
	}
	if empty := tree.BuildContext(""); len(empty.Messages) != 0 {
		t.Fatal("explicit empty leaf gives messages")
	}
	if unknown := tree.BuildContext("ffffffff"); unknown.Leaf != c[1] {
		t.Fatal("unknown leaf does not fall back to the last entry")
	}
}

// A raw draft that arrives pretty-printed is still written as one line:
// a newline inside an entry would split it into two malformed lines.
func TestAppendCompactsMultiLineRawDraft(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	s, err := files.Create(path, "/w", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw := json.RawMessage("{\n  \"customType\": \"x\",\n  \"data\": {\"a\": [1,\n 2]}\n}")
	if _, err := s.Append(session.Draft{Type: "custom", Fields: raw}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != 2 {
		t.Fatalf("want header + one entry line, got %d lines:\n%s", n, data)
	}
	f, err := session.Load(path)
	if err != nil || len(f.Entries) != 1 || len(f.Warnings) != 0 {
		t.Fatalf("reload: %v, %d entries, warnings %v", err, len(f.Entries), f.Warnings)
	}
}

// TestWriteAtomicThroughSymlink: an --out path that is a symlink is
// written through — the file it leads to gets the content and the link
// stays a link (a rename over it replaced the link with a file and left the
// target as it was).
func TestWriteAtomicThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.jsonl")
	if err := os.WriteFile(target, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink("real.jsonl", link); err != nil {
		t.Skipf("SKIP: no symlinks here: %v", err)
	}
	if err := files.WriteAtomic(link, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is no longer a link: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new\n" {
		t.Fatalf("target holds %q", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("target's mode %v, want its own 0600", fi.Mode().Perm())
	}
}
