package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateOutKeepsAnExistingFile: --out does not replace a file that
// is there (exit 1, the file untouched) unless --force says so.
func TestMigrateOutKeepsAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "notes.jsonl")
	os.WriteFile(out, []byte("precious\n"), 0o644)
	_, stderr, code := runCLI(t, "migrate", demoSession, "--out", out)
	if code != exitFailure || !strings.Contains(stderr, "exists") || !strings.Contains(stderr, "--force") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	if data, _ := os.ReadFile(out); string(data) != "precious\n" {
		t.Fatalf("the file was replaced: %q", data)
	}
	if _, stderr, code := runCLI(t, "migrate", demoSession, "--out", out, "--force"); code != 0 {
		t.Fatalf("--force: exit %d, %s", code, stderr)
	}
	want, _ := os.ReadFile(demoSession)
	if data, _ := os.ReadFile(out); !bytes.Equal(data, want) {
		t.Fatal("--force did not write the migrated session")
	}
}
