package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rehydrateSession is the demo session with its cwd at workspace, which
// holds the file its history reads last with marker in it, copied to
// path.
func rehydrateSession(t *testing.T, path, workspace, marker string) {
	t.Helper()
	data, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Skipf("demo session: %v", err)
	}
	f := filepath.Join(workspace, "internal", "report", "aggregate.go")
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte("package report // "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"cwd":"/home/dev/ledger"`), []byte(`"cwd":`+strconvQuote(workspace)), 1)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A session file under sessions.root may have been created by a client
// of `pith serve`, which chose its cwd: `pith compact` on it reads the
// workspace only as the daemon would (server.workspaceRoot; none here),
// while a session file of the user's own elsewhere is re-read from its
// cwd, run there.
func TestCompactConfinesDaemonSessions(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "sessions")
	cfg := filepath.Join(dir, "pith.json")
	b, _ := json.Marshal(map[string]any{
		"sessions":   map[string]any{"root": root},
		"compaction": map[string]any{"rehydrate": map[string]any{"files": 3}},
	})
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	daemons := filepath.Join(root, "team-a", "s.jsonl")
	rehydrateSession(t, daemons, t.TempDir(), "secret-of-the-operator")
	own := filepath.Join(dir, "own.jsonl")
	ownWorkspace := t.TempDir()
	rehydrateSession(t, own, ownWorkspace, "my-own-workspace")
	t.Chdir(ownWorkspace)
	for _, c := range []struct {
		path, marker string
		read         bool
	}{{daemons, "secret-of-the-operator", false}, {own, "my-own-workspace", true}} {
		if _, stderr, code := runCLI(t, "compact", c.path, "--config", cfg, "--keep-recent-tokens", "2000"); code != 0 {
			t.Fatalf("compact %s: exit %d: %s", c.path, code, stderr)
		}
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(data), c.marker); got != c.read {
			t.Errorf("%s: workspace file re-read: %v, want %v", c.path, got, c.read)
		}
	}
}
