package workspace

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newWorkspace(t testing.TB, files map[string]string) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

func TestReadConfined(t *testing.T) {
	w, dir := newWorkspace(t, map[string]string{"a.go": "package a\n", "sub/b.txt": "b\n"})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "sub", "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.go", filepath.Join(dir, "inner")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin"), []byte("ab\x00cd"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, ok := range []string{"a.go", "./sub/../a.go", filepath.Join(dir, "sub/b.txt"), "inner"} {
		if _, err := w.Read(ok, ReadOptions{}); err != nil {
			t.Errorf("Read(%q): %v", ok, err)
		}
	}
	for _, tc := range []struct {
		path string
		want error
	}{
		{"../x", ErrOutside},
		{"sub/../../x", ErrOutside},
		{filepath.Join(outside, "secret"), ErrOutside},
		{"/etc/passwd", ErrOutside},
		{"link", ErrOutside},
		{"sub/dirlink/secret", ErrOutside},
		{"a\x00b", ErrOutside},
		{"missing", ErrNotExist},
		{"sub", ErrNotRegular},
		{"bin", ErrBinary},
	} {
		f, err := w.Read(tc.path, ReadOptions{})
		if !errors.Is(err, tc.want) {
			t.Errorf("Read(%q) = %v, %v; want %v", tc.path, f, err, tc.want)
		}
		if f != nil && strings.Contains(f.Content, "secret") {
			t.Errorf("Read(%q) leaked the outside file", tc.path)
		}
	}
}

func TestReadWindow(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		b.WriteString(strings.Repeat("x", 9) + "\n") // 10 bytes a line
	}
	w, _ := newWorkspace(t, map[string]string{"f": b.String(), "nonl": "one\ntwo", "long": strings.Repeat("y", 1000)})

	f, err := w.Read("f", ReadOptions{Offset: 11, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if f.StartLine != 11 || f.Lines != 5 || len(f.Content) != 50 || f.EOF || f.Truncated {
		t.Errorf("window = %+v", f)
	}
	f, _ = w.Read("f", ReadOptions{Offset: 98})
	if f.Lines != 3 || !f.EOF {
		t.Errorf("tail = %+v", f)
	}
	f, _ = w.Read("f", ReadOptions{Offset: 500})
	if f.Lines != 0 || !f.EOF || f.Content != "" {
		t.Errorf("past the end = %+v", f)
	}
	f, _ = w.Read("f", ReadOptions{MaxBytes: 35})
	if f.Lines != 3 || !f.Truncated || f.EOF {
		t.Errorf("byte-bounded = %+v", f)
	}
	f, _ = w.Read("nonl", ReadOptions{Offset: 2})
	if f.Content != "two" || !f.EOF {
		t.Errorf("last line without newline = %+v", f)
	}
	f, _ = w.Read("long", ReadOptions{MaxBytes: 100})
	if len(f.Content) != 100 || !f.Truncated {
		t.Errorf("over-long first line = %d bytes, %+v", len(f.Content), f.Truncated)
	}
	if _, err := w.Read("f", ReadOptions{Offset: -1}); err == nil {
		t.Error("negative offset accepted")
	}
}

func TestReadHugeLineIsBounded(t *testing.T) {
	w, _ := newWorkspace(t, map[string]string{"huge": strings.Repeat("z", 3<<20) + "\nnext\n"})
	f, err := w.Read("huge", ReadOptions{MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Content) != 1000 || !f.Truncated {
		t.Errorf("got %d bytes, truncated %v", len(f.Content), f.Truncated)
	}
	f, _ = w.Read("huge", ReadOptions{Offset: 2, MaxBytes: 1000})
	if f.Content != "next\n" {
		t.Errorf("line after a huge one = %q", f.Content)
	}
}

func TestBuildMessageBudget(t *testing.T) {
	w, dir := newWorkspace(t, map[string]string{
		"small.go": strings.Repeat("a", 400),  // 100 tokens
		"mid.go":   strings.Repeat("b", 800),  // 200 tokens
		"big.go":   strings.Repeat("c", 4000), // 1000 tokens
		"tiny.go":  "x",
	})
	b := w.BuildMessage(
		[]string{"small.go", filepath.Join(dir, "big.go"), "mid.go", "small.go", "tiny.go", "../etc/passwd", "gone.go"},
		[]Reference{{Path: filepath.Join(dir, "docs/x.md"), Note: "the design"}, {Path: "docs/x.md"}},
		BuildOptions{BudgetTokens: 250, FileCapTokens: 500},
	)
	if b == nil {
		t.Fatal("nil message")
	}
	got := map[string]FileStatus{}
	for _, f := range b.Files {
		got[f.Path] = f
	}
	if len(b.Files) != 6 {
		t.Errorf("files = %+v", b.Files)
	}
	if !got["small.go"].Included || got["small.go"].Tokens != 100 {
		t.Errorf("small = %+v", got["small.go"])
	}
	if got["big.go"].Included || got["big.go"].Reason != "over the per-file cap" {
		t.Errorf("big = %+v", got["big.go"])
	}
	if got["mid.go"].Included || got["mid.go"].Reason != "over budget" {
		t.Errorf("mid = %+v", got["mid.go"])
	}
	if !got["tiny.go"].Included {
		t.Errorf("tiny = %+v (a later small file still fits)", got["tiny.go"])
	}
	if got["gone.go"].Included || got["../etc/passwd"].Included {
		t.Errorf("unreadable files included: %+v", b.Files)
	}
	if b.FileTokens > 250 {
		t.Errorf("file tokens %d over the budget", b.FileTokens)
	}
	if strings.Contains(b.Text, "ccc") || strings.Contains(b.Text, "bbb") {
		t.Error("a file over its bound has content in the message")
	}
	for _, want := range []string{`<file path="small.go">`, "- big.go (over the per-file cap)", "- docs/x.md — the design"} {
		if !strings.Contains(b.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, b.Text)
		}
	}
	if len(b.References) != 1 {
		t.Errorf("references = %+v, want one (deduplicated)", b.References)
	}
	raw, err := json.Marshal(b.Draft.Fields)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		CustomType string `json:"customType"`
		Content    string `json:"content"`
		Display    bool   `json:"display"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.CustomType != DefaultCustomType || body.Content != b.Text || b.Draft.Type != "custom_message" {
		t.Errorf("draft = %s (%v)", raw, err)
	}
}

func TestBuildMessageEmpty(t *testing.T) {
	w, _ := newWorkspace(t, nil)
	if b := w.BuildMessage(nil, nil, BuildOptions{BudgetTokens: 10}); b != nil {
		t.Errorf("empty build = %+v", b)
	}
}

func TestOpenRejects(t *testing.T) {
	if _, err := Open("", Options{}); err == nil {
		t.Error("empty dir accepted")
	}
	if _, err := Open("relative/dir", Options{}); err == nil {
		t.Error("relative dir accepted")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), Options{}); err == nil {
		t.Error("missing dir accepted")
	}
}
