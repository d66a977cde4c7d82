package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/testfixture"
)

var fixtureDir = testfixture.PiDir()

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestContextJSONMatchesPi runs `pith context --json` on the shared pi
// fixtures and compares it with what pi 0.73.1 computed (the golden data of
// core/session), by position for v1 files.
func TestContextJSONMatchesPi(t *testing.T) {
	var golden struct {
		Files []struct {
			File          string          `json:"file"`
			IDsFromFile   bool            `json:"idsFromFile"`
			LeafID        *string         `json:"leafId"`
			Messages      int             `json:"messages"`
			Roles         []string        `json:"roles"`
			Tokens        int             `json:"tokens"`
			Model         json.RawMessage `json:"model"`
			ThinkingLevel string          `json:"thinkingLevel"`
		} `json:"files"`
	}
	data, err := os.ReadFile("../../core/session/testdata/golden/pi-fixtures-context.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	for _, g := range golden.Files {
		t.Run(g.File, func(t *testing.T) {
			path := filepath.Join(fixtureDir, g.File)
			if _, err := os.Stat(path); err != nil {
				testfixture.Missing(t, "pi fixtures not available: %v", err)
			}
			stdout, stderr, code := runCLI(t, "context", path, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
				t.Fatalf("not exactly one line of JSON: %q", stdout)
			}
			var got struct {
				Messages      int             `json:"messages"`
				Roles         []string        `json:"roles"`
				Tokens        int             `json:"tokens"`
				Model         json.RawMessage `json:"model"`
				ThinkingLevel string          `json:"thinkingLevel"`
				LeafID        string          `json:"leafId"`
			}
			dec := json.NewDecoder(strings.NewReader(stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got.Messages != g.Messages || strings.Join(got.Roles, ",") != strings.Join(g.Roles, ",") ||
				got.Tokens != g.Tokens || got.ThinkingLevel != g.ThinkingLevel || !jsonEqual(got.Model, g.Model) {
				t.Errorf("got %d messages, %d tokens, model %s, thinking %s; pi %d, %d, %s, %s",
					got.Messages, got.Tokens, got.Model, got.ThinkingLevel, g.Messages, g.Tokens, g.Model, g.ThinkingLevel)
			}
			if g.IDsFromFile && got.LeafID != *g.LeafID {
				t.Errorf("leafId %s, pi %s", got.LeafID, *g.LeafID)
			}
		})
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestCommandsOnDemo(t *testing.T) {
	demo := "../../examples/demo-session.jsonl"
	out, stderr, code := runCLI(t, "context", demo)
	if code != 0 || !strings.Contains(out, "context: ") || !strings.Contains(out, "/ 200000 tokens") {
		t.Fatalf("context: exit %d, %s%s", code, out, stderr)
	}
	out, _, code = runCLI(t, "context", demo, "--window", "50000")
	if code != 0 || !strings.Contains(out, "/ 50000 tokens") {
		t.Fatalf("--window: %s", out)
	}
	out, _, code = runCLI(t, "tree", demo)
	if code != 0 || !strings.Contains(out, "← leaf") || !strings.Contains(out, "[label: bom-fix]") || !strings.Contains(out, "├─") {
		t.Fatalf("tree: %s", out)
	}
	out, _, code = runCLI(t, "tree", demo, "--json")
	var tree struct {
		LeafID  string `json:"leafId"`
		Entries []struct {
			ID     string `json:"id"`
			OnPath bool   `json:"onPath"`
		} `json:"entries"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &tree) != nil || tree.LeafID == "" || len(tree.Entries) < 30 {
		t.Fatalf("tree --json: %s", out)
	}
	// --leaf: the context as it was at the labelled entry.
	var leafID string
	for _, e := range tree.Entries {
		if e.OnPath {
			leafID = e.ID
			break
		}
	}
	out, _, code = runCLI(t, "context", demo, "--leaf", leafID, "--json")
	if code != 0 || !strings.Contains(out, `"leafId":"`+leafID+`"`) {
		t.Fatalf("--leaf: %s", out)
	}
}

func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	v1 := filepath.Join(dir, "old.jsonl")
	os.WriteFile(v1, []byte(`{"type":"session","id":"s1","timestamp":"t","cwd":"/"}
{"type":"message","timestamp":"t","message":{"role":"user","content":"hi"}}
{"type":"message","timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"c"}}
{"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":1,"tokensBefore":5}
`), 0o640)
	before, _ := os.ReadFile(v1)
	out := filepath.Join(dir, "new.jsonl")
	if _, stderr, code := runCLI(t, "migrate", v1, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(v1); !bytes.Equal(before, after) {
		t.Fatal("migrate --out changed the input")
	}
	data, _ := os.ReadFile(out)
	if !bytes.Contains(data, []byte(`"version":3`)) || !bytes.Contains(data, []byte(`"role":"custom"`)) ||
		!bytes.Contains(data, []byte(`"firstKeptEntryId":"`)) || bytes.Contains(data, []byte("firstKeptEntryIndex")) {
		t.Fatalf("not v3:\n%s", data)
	}
	// Migrating the result again changes nothing.
	again := filepath.Join(dir, "again.jsonl")
	runCLI(t, "migrate", out, "--out", again)
	if d2, _ := os.ReadFile(again); !bytes.Equal(d2, data) {
		t.Fatal("migrating a v3 file changed it")
	}
	if _, _, code := runCLI(t, "migrate", v1, "--in-place"); code != 0 {
		t.Fatal("in-place failed")
	}
	if st, _ := os.Stat(v1); st.Mode().Perm() != 0o640 {
		t.Fatalf("in-place lost the mode: %v", st.Mode())
	}
	if _, stderr, code := runCLI(t, "migrate", v1, "--in-place", "--out", out); code == 0 || !strings.Contains(stderr, "together") {
		t.Fatalf("conflicting flags accepted: %s", stderr)
	}
}

// TestErrorsAreOneLine: every failure is one line on stderr naming the
// file (and line), with a non-zero exit code, and no file is touched.
func TestErrorsAreOneLine(t *testing.T) {
	dir := t.TempDir()
	notSession := filepath.Join(dir, "notes.jsonl")
	os.WriteFile(notSession, []byte("hello\n"), 0o644)
	for name, args := range map[string][]string{
		"missing file":  {"context", filepath.Join(dir, "nope.jsonl")},
		"not a session": {"tree", notSession},
		"unknown leaf":  {"context", "../../examples/demo-session.jsonl", "--leaf", "deadbeef"},
		"migrate bad":   {"migrate", notSession, "--in-place"},
		"no args":       {"context"},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := runCLI(t, args...)
			if code == 0 {
				t.Fatal("exit 0")
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "pith: ") {
				t.Fatalf("stderr not one line: %q", stderr)
			}
			if len(args) > 1 && !strings.Contains(stderr, filepath.Base(args[1])) && name != "no args" {
				t.Fatalf("error does not name the file: %q", stderr)
			}
		})
	}
	if data, _ := os.ReadFile(notSession); string(data) != "hello\n" {
		t.Fatal("a failed command changed the file")
	}
}
