package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// TestBranchSummaryRecordsHookTimeline: a branch summary the branch-notes
// example plugin (a subprocess) supplies keeps the plugin's details and
// gains the run's hook timeline.
func TestBranchSummaryRecordsHookTimeline(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/pith-dev/pith/plugins/examples/branch-notes").CombinedOutput(); err != nil {
		t.Fatalf("build branch-notes: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "branch-notes")
	cfg := writeConfig(t, map[string]any{"name": "branch-notes", "path": bin, "sha256": fileSum(t, bin)})
	path := copyFile(t, "../../examples/demo-session.jsonl")
	if _, stderr, code := runCLI(t, "navigate", "--config", cfg, path, "--to", demoBranchPoint, "--summarize"); code != 0 {
		t.Fatalf("navigate: exit %d: %s", code, stderr)
	}
	var bs gjson.Result
	data, _ := os.ReadFile(path)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if e := gjson.Parse(line); e.Get("type").String() == "branch_summary" {
			bs = e
		}
	}
	if !bs.Get("fromHook").Bool() || !bs.Get("details.readFiles").Exists() {
		t.Fatalf("no summary from the plugin with its details: %s", bs.Raw)
	}
	steps := bs.Get("details.hookTimeline").Array()
	if len(steps) != 1 || steps[0].Get("plugin").String() != "branch-notes" || steps[0].Get("event").String() != "session_before_tree" ||
		steps[0].Get("result").String() != "summary supplied" {
		t.Fatalf("timeline: %s", bs.Get("details").Raw)
	}
}

// TestServeViewerFlag: `pith serve --viewer 127.0.0.1:0` serves the viewer
// and says where; without credentials configured, loopback needs none.
func TestServeViewerFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pith.json")
	writeServeConfig(t, cfg, 800, nil)
	p := startServe(t, cfg, "--viewer", "127.0.0.1:0")
	p.waitLog(t, "viewer: url=")
	var url string
	for _, line := range strings.Split(p.log(), "\n") {
		if _, after, ok := strings.Cut(line, "viewer: url="); ok {
			url = strings.TrimSpace(after)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Sessions") {
		t.Fatalf("GET %s: %d\n%s", url, resp.StatusCode, body)
	}
}
