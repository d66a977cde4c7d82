package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/testfixture"
	"github.com/pith-dev/pith/internal/testproc"
)

func copyFile(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		testfixture.Missing(t, "%s: %v", src, err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

type contextOut struct {
	Messages int      `json:"messages"`
	Roles    []string `json:"roles"`
	Tokens   int      `json:"tokens"`
}

func contextOf(t *testing.T, path string) contextOut {
	t.Helper()
	out, stderr, code := runCLI(t, "context", path, "--json")
	if code != 0 {
		t.Fatalf("context: %s", stderr)
	}
	var c contextOut
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompactEndToEnd: `pith compact` with the built-in summarizer on the
// demo session and on copies of both pi fixtures; `pith context` afterwards
// starts with the summary and counts far fewer tokens.
func TestCompactEndToEnd(t *testing.T) {
	for _, src := range []string{
		"../../examples/demo-session.jsonl",
		filepath.Join(fixtureDir, "before-compaction.v3.jsonl"),
		filepath.Join(fixtureDir, "large-session.v3.jsonl"),
	} {
		t.Run(filepath.Base(src), func(t *testing.T) {
			path := copyFile(t, src)
			before := contextOf(t, path)
			keep := "20000"
			if strings.Contains(src, "demo") {
				keep = "8000" // the demo is small; keep less so there is history to summarize
			}
			out, stderr, code := runCLI(t, "compact", path, "--keep-recent-tokens", keep, "--json")
			if code != 0 {
				t.Fatalf("compact: exit %d: %s", code, stderr)
			}
			var res struct {
				TokensBefore       int    `json:"tokensBefore"`
				TokensAfter        int    `json:"tokensAfter"`
				MessagesSummarized int    `json:"messagesSummarized"`
				Summary            string `json:"summary"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if res.MessagesSummarized == 0 || !strings.Contains(res.Summary, "## Goal") || !strings.Contains(res.Summary, "## Critical Context") {
				t.Fatalf("summary not made: %+v", res)
			}
			after := contextOf(t, path)
			if len(after.Roles) == 0 || after.Roles[0] != "compactionSummary" {
				t.Fatalf("context does not start with the summary: %v", after.Roles[:min(3, len(after.Roles))])
			}
			if after.Tokens*2 > before.Tokens || after.Tokens != res.TokensAfter {
				t.Fatalf("tokens %d → %d (reported %d): not far fewer", before.Tokens, after.Tokens, res.TokensAfter)
			}
		})
	}
}

// TestCompactDryRunJSON prints exactly one object of the documented shape,
// and writes nothing.
func TestCompactDryRunJSON(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	before, _ := os.ReadFile(path)
	out, stderr, code := runCLI(t, "compact", path, "--dry-run", "--json", "--keep-recent-tokens", "8000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var p map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&p); err != nil || dec.More() {
		t.Fatalf("not one JSON object: %q", out)
	}
	for _, k := range []string{"firstKeptEntryId", "isSplitTurn", "tokensBefore", "keepRecentTokens", "messagesToSummarize", "turnPrefixMessages", "readFiles", "modifiedFiles"} {
		if _, ok := p[k]; !ok {
			t.Errorf("missing %s in %s", k, out)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("dry run changed the file")
	}
	// After a compaction the leaf is the compaction entry: nothing to do.
	if _, stderr, code := runCLI(t, "compact", path, "--keep-recent-tokens", "8000"); code != 0 {
		t.Fatalf("compact: %s", stderr)
	}
	out, _, _ = runCLI(t, "compact", path, "--dry-run", "--json")
	if !strings.Contains(out, `"nothingToCompact":true`) || !strings.Contains(out, `"reason":`) {
		t.Fatalf("second dry run: %s", out)
	}
	compacted, _ := os.ReadFile(path)
	if _, stderr, code := runCLI(t, "compact", path); code == 0 || !strings.Contains(stderr, "nothing to compact") {
		t.Fatalf("compacting an already compacted session: exit %d, %s", code, stderr)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(compacted, again) {
		t.Fatal("a refused compaction changed the file")
	}
}

// TestCompactRefusesOldFormat: a v1 file is read through an in-memory
// migration; appending to it would leave entries pi cannot resolve.
func TestCompactRefusesOldFormat(t *testing.T) {
	path := copyFile(t, filepath.Join(fixtureDir, "large-session.jsonl"))
	before, _ := os.ReadFile(path)
	_, stderr, code := runCLI(t, "compact", path)
	if code == 0 || !strings.Contains(stderr, "pith migrate --in-place") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the v1 file changed")
	}
	if _, stderr, code := runCLI(t, "migrate", path, "--in-place"); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := runCLI(t, "compact", path); code != 0 {
		t.Fatalf("after migrate: %s", stderr)
	}
}

func TestPruneAndRestore(t *testing.T) {
	path := copyFile(t, filepath.Join(fixtureDir, "before-compaction.v3.jsonl"))
	original, _ := os.ReadFile(path)
	if out, stderr, code := runCLI(t, "prune", "--restore", path); code != 0 || !strings.Contains(out, "nothing to restore") {
		t.Fatalf("restore of a session never pruned: exit %d: %s%s", code, out, stderr)
	}
	out, stderr, code := runCLI(t, "prune", path, "--dry-run", "--json")
	if code != 0 {
		t.Fatalf("dry run: %s", stderr)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(original, after) {
		t.Fatal("dry run changed the file")
	}
	if _, stderr, code = runCLI(t, "prune", path, "--protect", "2000", "--minimum", "1000"); code != 0 {
		t.Fatalf("prune: %s", stderr)
	}
	pruned, _ := os.ReadFile(path)
	if bytes.Equal(pruned, original) || !bytes.Contains(pruned, []byte("[Output truncated - ")) {
		t.Fatalf("nothing pruned (dry run said %s)", out)
	}
	if _, stderr, code = runCLI(t, "prune", "--restore", path); code != 0 {
		t.Fatalf("restore: %s", stderr)
	}
	if restored, _ := os.ReadFile(path); !bytes.Equal(restored, original) {
		t.Fatal("restore is not byte-identical")
	}
}

// TestCompactRefusesWithoutAClosedPlugin: a plugin with failure: closed
// that cannot start stops the command, file untouched; with failure: open
// the compaction runs without it.
func TestCompactRefusesWithoutAClosedPlugin(t *testing.T) {
	notPlugin := filepath.Join(t.TempDir(), "not-a-plugin.sh")
	if err := os.WriteFile(notPlugin, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, failure := range []string{"closed", "open"} {
		t.Run(failure, func(t *testing.T) {
			session := copyFile(t, "../../examples/demo-session.jsonl")
			before, _ := os.ReadFile(session)
			cfg := writeConfig(t, map[string]any{"name": "guard", "path": notPlugin, "failure": failure})
			_, stderr, code := runCLI(t, "compact", "--config", cfg, session)
			after, _ := os.ReadFile(session)
			if failure == "closed" {
				if code == 0 || !strings.Contains(stderr, `plugin "guard" has failure: closed and did not start`) {
					t.Fatalf("code %d, stderr %q", code, stderr)
				}
				if !bytes.Equal(before, after) {
					t.Error("the session changed")
				}
				return
			}
			if code != 0 || bytes.Equal(before, after) {
				t.Fatalf("open: code %d, changed %v, stderr %q", code, !bytes.Equal(before, after), stderr)
			}
		})
	}
}

// TestCompactStartsOnlyNeededPlugins: a plugin whose configured events the
// command never fires is not started (here one that could not start, with
// failure: closed, which would otherwise stop the command); one that lists
// a compaction event is; and a list that differs from the plugin's own
// answer is logged.
func TestCompactStartsOnlyNeededPlugins(t *testing.T) {
	guard, audit := buildExamplePlugins(t)
	notPlugin := filepath.Join(t.TempDir(), "not-a-plugin.sh")
	if err := os.WriteFile(notPlugin, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	session := copyFile(t, "../../examples/demo-session.jsonl")
	cfg := writeConfig(t,
		map[string]any{"name": "tree-only", "path": notPlugin, "failure": "closed", "events": []string{"session_before_tree"}},
		map[string]any{"name": "audit", "path": audit, "args": []string{"--file", auditFile}, "events": []string{"session_compact", "session_tree"}},
		map[string]any{"name": "guard", "path": guard, "events": []string{"session_compact"}},
	)
	_, stderr, code := runCLI(t, "compact", "--config", cfg, session)
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	if data, err := os.ReadFile(auditFile); err != nil || !bytes.Contains(data, []byte("session_compact")) {
		t.Fatalf("audit did not record the compaction: %v %q", err, data)
	}
	if !strings.Contains(stderr, "plugin handles other events than its configuration lists") || !strings.Contains(stderr, "guard") {
		t.Errorf("guard's wrong events list was not logged: %s", stderr)
	}
	if strings.Count(stderr, "plugin handles other events") != 1 {
		t.Errorf("a warning for a plugin whose list is right: %s", stderr)
	}
	testproc.RequireNoChildren(t)
}
