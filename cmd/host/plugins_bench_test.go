package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkCompactDemo is `pith compact` of the bundled demo session
// without plugins and with the five example plugins (each listing its
// events, as scripts/demo.sh configures them, and all five started when
// none lists them), in process: the plugins' start, the compaction with
// their calls, and their stop — everything of a command but the pith
// process's own start. Its ratio is the plugins' cost the issue measures
// as whole processes.
func BenchmarkCompactDemo(b *testing.B) {
	demo, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		b.Skip(err)
	}
	dir := b.TempDir()
	names := []string{"guard", "enterprise-summarizer", "instructions-keeper", "branch-notes", "audit"}
	// Linked statically, as make build links them.
	args := []string{"build", "-tags", "netgo,osusergo", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "github.com/pith-dev/pith/plugins/examples/"+n)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		b.Fatalf("build example plugins: %v\n%s", err, out)
	}
	project := filepath.Join(dir, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "AGENTS.md"), []byte("# Working agreements\n- Run the tests.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	events := map[string][]string{
		"guard":                 {"session_before_compact"},
		"enterprise-summarizer": {"session_before_compact"},
		"instructions-keeper":   {"session.compacting"},
		"branch-notes":          {"session_before_tree"},
		"audit":                 {"session_compact", "session_tree"},
	}
	config := func(withEvents bool) string {
		var plugins []map[string]any
		for i, n := range names {
			p := map[string]any{"name": n, "path": filepath.Join(dir, n), "priority": 10 * (i + 1), "timeout": "60s"}
			switch n {
			case "instructions-keeper":
				p["args"] = []string{"--dir", project}
			case "audit":
				p["args"] = []string{"--file", filepath.Join(dir, "audit.jsonl")}
			}
			if withEvents {
				p["events"] = events[n]
			}
			plugins = append(plugins, p)
		}
		return writeBenchConfig(b, plugins)
	}
	for _, bc := range []struct{ name, config string }{
		{"none", writeBenchConfig(b, nil)},
		{"five-with-events", config(true)},
		{"five-all-started", config(false)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			session := filepath.Join(b.TempDir(), "session.jsonl")
			f := compactFlags{config: bc.config, keepRecentTokens: 8000}
			changed := func(name string) bool { return name == "keep-recent-tokens" }
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(session, demo, 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := runCompact(context.Background(), io.Discard, io.Discard, session, f, changed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func writeBenchConfig(b *testing.B, plugins []map[string]any) string {
	b.Helper()
	if plugins == nil {
		plugins = []map[string]any{}
	}
	data, err := json.Marshal(map[string]any{"plugins": plugins})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "pith.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}
