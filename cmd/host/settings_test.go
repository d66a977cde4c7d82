package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// configFile writes a JSON configuration and returns its path.
func configFile(t *testing.T, cfg map[string]any) string {
	t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pith.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNavigateBranchSummaryEnabled: branchSummary.enabled makes a plain
// `pith navigate` summarize; --no-summarize overrides it; without the key
// only --summarize does.
func TestNavigateBranchSummaryEnabled(t *testing.T) {
	on := configFile(t, map[string]any{"branchSummary": map[string]any{"enabled": true}})
	for _, tc := range []struct {
		name    string
		args    []string
		summary bool
	}{
		{"enabled", []string{"--config", on}, true},
		{"enabled, --no-summarize", []string{"--config", on, "--no-summarize"}, false},
		{"enabled, --summarize=false", []string{"--config", on, "--summarize=false"}, false},
		{"default", nil, false},
		{"default, --summarize", []string{"--summarize"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, "../../examples/demo-session.jsonl")
			t.Setenv("PITH_CONFIG", "")
			args := append([]string{"navigate", path, "--to", demoBranchPoint, "--json"}, tc.args...)
			out, stderr, code := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var res struct {
				SummaryEntryID string `json:"summaryEntryId"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			if (res.SummaryEntryID != "") != tc.summary {
				t.Fatalf("summary entry %q, want one: %v", res.SummaryEntryID, tc.summary)
			}
		})
	}
	path := copyFile(t, "../../examples/demo-session.jsonl")
	if _, _, code := runCLI(t, "navigate", path, "--to", demoBranchPoint, "--summarize", "--no-summarize"); code == 0 {
		t.Fatal("--summarize --no-summarize accepted")
	}
}
