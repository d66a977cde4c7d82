package main

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// lastCompaction returns the last compaction entry of the file, or "".
func lastCompaction(t *testing.T, path string) gjson.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last gjson.Result
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if e := gjson.ParseBytes(sc.Bytes()); e.Get("type").String() == "compaction" {
			last = gjson.Parse(string(sc.Bytes()))
		}
	}
	return last
}

// TestCompactionRecordsHookTimeline: with the guard and audit example
// plugins running as subprocesses, a compaction's entry records its reason
// and one timeline step per plugin call made before it was saved; once the
// guard cancels (a no-compact label), nothing is written and the command
// says why.
func TestCompactionRecordsHookTimeline(t *testing.T) {
	guard, audit := buildExamplePlugins(t)
	cfg := writeConfig(t,
		map[string]any{"name": "guard", "path": guard, "sha256": fileSum(t, guard), "priority": 10},
		map[string]any{"name": "audit", "path": audit, "sha256": fileSum(t, audit), "priority": 20, "args": []string{"--file", t.TempDir() + "/audit.jsonl"}},
	)
	path := copyFile(t, "../../examples/demo-session.jsonl")
	if _, stderr, code := runCLI(t, "compact", "--config", cfg, "--keep-recent-tokens", "8000", path); code != 0 {
		t.Fatalf("compact: exit %d: %s", code, stderr)
	}
	c := lastCompaction(t, path)
	if got := c.Get("details.reason").String(); got != "manual" {
		t.Errorf("details.reason = %q, want manual", got)
	}
	steps := c.Get("details.hookTimeline").Array()
	var seen []string
	for _, s := range steps {
		seen = append(seen, s.Get("plugin").String()+" "+s.Get("event").String()+" "+s.Get("result").String())
		if !s.Get("durationMs").Exists() {
			t.Errorf("step without durationMs: %s", s.Raw)
		}
	}
	joined := strings.Join(seen, "\n")
	if !strings.Contains(joined, "guard session_before_compact no opinion") {
		t.Fatalf("timeline lacks the guard's calls:\n%s\n%s", joined, c.Get("details").Raw)
	}
	if c.Get("details.readFiles").Type == gjson.Null || !c.Get("details.readFiles").Exists() {
		t.Errorf("details lost readFiles: %s", c.Get("details").Raw)
	}

	path = copyFile(t, "../../examples/demo-session.jsonl")
	leaf := lastID(t, path)
	if _, stderr, code := runCLI(t, "label", path, leaf, "no-compact"); code != 0 {
		t.Fatalf("label: %s", stderr)
	}
	before, _ := os.ReadFile(path)
	_, stderr, code := runCLI(t, "compact", "--config", cfg, "--keep-recent-tokens", "8000", path)
	after, _ := os.ReadFile(path)
	if code == 0 || !strings.Contains(stderr, `labelled "no-compact"`) {
		t.Fatalf("compact under no-compact: exit %d, stderr %q", code, stderr)
	}
	if string(before) != string(after) {
		t.Error("a cancelled compaction changed the file")
	}
}

func lastID(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return gjson.Get(lines[len(lines)-1], "id").String()
}
