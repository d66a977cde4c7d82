package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// TestCompactDryRunReportsCalibration: --dry-run --json says which method
// derived keepRecentTokens and with what ratio; compaction.calibrationMethod
// and --calibration choose the method.
func TestCompactDryRunReportsCalibration(t *testing.T) {
	t.Setenv("PITH_CONFIG", "")
	type cal struct {
		KeepRecentTokens int `json:"keepRecentTokens"`
		Calibration      *struct {
			Method   string  `json:"method"`
			Ratio    float64 `json:"ratio"`
			Measured int     `json:"measured"`
		} `json:"calibration"`
	}
	run := func(args ...string) cal {
		t.Helper()
		out, stderr, code := runCLI(t, append([]string{"compact", "../../examples/demo-session.jsonl", "--dry-run", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var c cal
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	def := run()
	if def.Calibration == nil || def.Calibration.Method != "delta" || def.Calibration.Ratio <= 1 || def.KeepRecentTokens >= 20000 {
		t.Fatalf("default: %+v", def)
	}
	total := run("--config", configFile(t, map[string]any{"compaction": map[string]any{"calibrationMethod": "total"}}))
	if total.Calibration == nil || total.Calibration.Method != "total" || total.KeepRecentTokens == def.KeepRecentTokens {
		t.Fatalf("total: %+v (delta %+v)", total, def)
	}
	if flag := run("--calibration", "total"); flag.KeepRecentTokens != total.KeepRecentTokens {
		t.Fatalf("--calibration total: %+v", flag)
	}
	if off := run("--no-calibrate", "--keep-recent-tokens", "8000"); off.Calibration != nil || off.KeepRecentTokens != 8000 {
		t.Fatalf("--no-calibrate: %+v", off)
	}
}

// TestContextLLM: `pith context --llm` prints the messages converted for a
// model: after a compaction, and after a branch summary, the summary is a
// user message framing it, and no synthetic role is left.
func TestContextLLM(t *testing.T) {
	t.Setenv("PITH_CONFIG", "")
	path := copyFile(t, "../../examples/demo-session.jsonl")
	check := func(role string) {
		t.Helper()
		out, stderr, code := runCLI(t, "context", path, "--llm")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var got struct {
			Messages []struct {
				Role    string `json:"role"`
				Content json.RawMessage
			} `json:"messages"`
			Tokens int    `json:"tokens"`
			LeafID string `json:"leafId"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		raw := contextOf(t, path)
		if len(got.Messages) != len(raw.Roles) || got.Tokens <= 0 || got.LeafID == "" {
			t.Fatalf("%d messages (raw %d), tokens %d, leaf %q", len(got.Messages), len(raw.Roles), got.Tokens, got.LeafID)
		}
		summaries := 0
		for i, m := range got.Messages {
			switch m.Role {
			case "user", "assistant", "toolResult":
			default:
				t.Fatalf("message %d has role %s", i, m.Role)
			}
			if raw.Roles[i] == role {
				var blocks []struct{ Type, Text string }
				json.Unmarshal(m.Content, &blocks)
				if m.Role != "user" || len(blocks) != 1 || !strings.Contains(blocks[0].Text, "\n\n<summary>\n") || !strings.HasSuffix(blocks[0].Text, "\n</summary>") {
					t.Fatalf("%s not wrapped: %s", role, m.Content)
				}
				summaries++
			}
		}
		if summaries != 1 {
			t.Fatalf("%d %s messages", summaries, role)
		}
	}
	if _, stderr, code := runCLI(t, "compact", path, "--keep-recent-tokens", "4000"); code != 0 {
		t.Fatalf("compact: %s", stderr)
	}
	check("compactionSummary")
	if _, stderr, code := runCLI(t, "navigate", path, "--to", demoBranchPoint, "--summarize"); code != 0 {
		t.Fatalf("navigate: %s", stderr)
	}
	check("branchSummary")
}

// TestConfigValidateFlagsInertKeys: a key accepted but without effect is a
// warning, and a problem with --strict.
func TestConfigValidateFlagsInertKeys(t *testing.T) {
	t.Setenv("PITH_CONFIG", "")
	path := configFile(t, map[string]any{"branchSummary": map[string]any{"skipPrompt": true}, "compaction": map[string]any{"keepRecentTokens": 10000}})
	out, stderr, code := runCLI(t, "config", "validate", "--no-env", path)
	if code != 0 || !strings.Contains(out, path+": ok") || !strings.Contains(stderr, path+": warning: branchSummary.skipPrompt: has no effect") ||
		strings.Contains(stderr, "keepRecentTokens") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	if _, _, code := runCLI(t, "config", "validate", "--no-env", "--strict", path); code == 0 {
		t.Fatal("--strict accepted an inert key")
	}
	clean := configFile(t, map[string]any{"compaction": map[string]any{"keepRecentTokens": 10000}})
	if _, stderr, code := runCLI(t, "config", "validate", "--no-env", "--strict", clean); code != 0 || stderr != "" {
		t.Fatalf("clean file: exit %d, %s", code, stderr)
	}
}

// TestPruneReadsPruningConfig: pith prune takes pruning.* from the
// configuration; its flags win.
func TestPruneReadsPruningConfig(t *testing.T) {
	t.Setenv("PITH_CONFIG", "")
	cfg := configFile(t, map[string]any{"pruning": map[string]any{"protectTokens": 100, "minimumSavings": 10, "protectedTools": []string{}}})
	candidates := func(args ...string) float64 {
		t.Helper()
		out, stderr, code := runCLI(t, append([]string{"prune", "../../examples/demo-session.jsonl", "--dry-run", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var got map[string]any
		json.Unmarshal([]byte(out), &got)
		return got["candidates"].(float64)
	}
	if n := candidates(); n != 0 {
		t.Fatalf("defaults: %v candidates", n)
	}
	if n := candidates("--config", cfg); n == 0 {
		t.Fatal("pruning.* of the configuration not used")
	}
	if n := candidates("--config", cfg, "--minimum", "100000"); n != 0 {
		t.Fatalf("--minimum did not win: %v candidates", n)
	}
}
