package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTreeLimit: --limit N prints the first N entries and one marker for
// the rest; the count at the end is still every entry's.
func TestTreeLimit(t *testing.T) {
	out, stderr, code := runCLI(t, "tree", demoSession, "--limit", "5")
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 8 || lines[5] != "  … 32 more entries (--limit 0 shows all)" || !strings.HasPrefix(lines[7], "37 entries;") {
		t.Fatalf("--limit 5:\n%s", out)
	}
	all, _, _ := runCLI(t, "tree", demoSession, "--limit", "0")
	plain, _, _ := runCLI(t, "tree", demoSession)
	if all != plain || strings.Contains(plain, "more entr") {
		t.Fatal("--limit 0 is not the whole tree")
	}
}

// TestTreeDepth: --depth 0 hides the abandoned branch behind one marker
// but keeps the path to the leaf.
func TestTreeDepth(t *testing.T) {
	out, stderr, code := runCLI(t, "tree", demoSession, "--depth", "0")
	if code != 0 {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	if !strings.Contains(out, "    … 5 more entries in deeper branches\n") || !strings.Contains(out, "← leaf") ||
		!strings.Contains(out, "[label: bom-fix]") || !strings.Contains(out, "37 entries;") {
		t.Fatalf("--depth 0:\n%s", out)
	}
	full, _, _ := runCLI(t, "tree", demoSession)
	if got, want := strings.Count(out, "\n"), strings.Count(full, "\n")-5+1; got != want {
		t.Fatalf("--depth 0 printed %d lines, want %d", got, want)
	}
}

// TestTreeJSONLimit: --json leaves the hidden entries out and counts them.
func TestTreeJSONLimit(t *testing.T) {
	out, _, code := runCLI(t, "tree", demoSession, "--limit", "3", "--json")
	var tree struct {
		LeafID         string            `json:"leafId"`
		Entries        []json.RawMessage `json:"entries"`
		OmittedEntries int               `json:"omittedEntries"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &tree) != nil || len(tree.Entries) != 3 || tree.OmittedEntries != 34 || tree.LeafID == "" {
		t.Fatalf("exit %d: %s", code, out)
	}
	if out, _, _ := runCLI(t, "tree", demoSession, "--json"); strings.Contains(out, "omittedEntries") {
		t.Fatal("omittedEntries without a limit")
	}
}
