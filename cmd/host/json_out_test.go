package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decodeStrict decodes one JSON line into v, refusing fields v lacks:
// the documented shape, and nothing else.
func decodeStrict(t *testing.T, out string, v any) {
	t.Helper()
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("not one line: %q", out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestLabelJSON: label --json is {entryId, targetId, label, cleared}.
func TestLabelJSON(t *testing.T) {
	path := copyFile(t, demoSession)
	var got labelJSON
	out, stderr, code := runCLI(t, "label", path, "9b22e738", "done", "--json")
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	decodeStrict(t, out, &got)
	if got.EntryID == "" || got.TargetID != "9b22e738" || got.Label != "done" || got.Cleared {
		t.Fatalf("%+v", got)
	}
	out, _, _ = runCLI(t, "label", path, "9b22e738", "--clear", "--json")
	got = labelJSON{}
	decodeStrict(t, out, &got)
	if !got.Cleared || got.Label != "" || got.EntryID == "" {
		t.Fatalf("--clear: %+v", got)
	}
}

// TestImportExportJSON: import --json is {file, name, bytes}; export
// --out --json {name, out, bytes}, and the file is the session.
func TestImportExportJSON(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile(demoSession)
	out, stderr, code := runCLI(t, "import", "--store", dir, demoSession, "team/demo.jsonl", "--json")
	if code != 0 {
		t.Fatalf("import: exit %d, %s", code, stderr)
	}
	var imp importJSON
	decodeStrict(t, out, &imp)
	if imp != (importJSON{File: demoSession, Name: "team/demo.jsonl", Bytes: len(data)}) {
		t.Fatalf("import: %+v", imp)
	}
	file := filepath.Join(t.TempDir(), "out.jsonl")
	out, stderr, code = runCLI(t, "export", "--store", dir, "team/demo.jsonl", "--out", file, "--json")
	if code != 0 {
		t.Fatalf("export: exit %d, %s", code, stderr)
	}
	var exp exportJSON
	decodeStrict(t, out, &exp)
	if exp != (exportJSON{Name: "team/demo.jsonl", Out: file, Bytes: len(data)}) {
		t.Fatalf("export: %+v", exp)
	}
	if got, _ := os.ReadFile(file); string(got) != string(data) {
		t.Fatal("export --json changed what was written")
	}
}
