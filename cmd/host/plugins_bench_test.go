package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCompactDemo is `pith compact` of the bundled demo session
// without plugins and with the five example plugins (each listing its
// events, as scripts/demo.sh configures them, and all five started when
// none lists them, and guard alone), in process: the plugins' start, the compaction with
// their calls, and their stop — everything of a command but the pith
// process's own start. BenchmarkCompactDemoProcess is the same as whole
// processes, the way the ratio of issue 14 is measured.
func BenchmarkCompactDemo(b *testing.B) {
	demo, configs := demoBench(b, "")
	for _, bc := range configs {
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

// BenchmarkCompactDemoProcess runs `bin/pith compact` as a process on a
// fresh copy of the demo session for each iteration, as a user would:
// compare none with five-with-events (the plugins' cost as a ratio of the
// command's own time). Wall time, and the CPU time of pith and its
// plugins per run (cpu-ms/op); the machine's load shows in the wall time.
func BenchmarkCompactDemoProcess(b *testing.B) {
	dir := b.TempDir()
	pith := buildPith(b, dir)
	demo, configs := demoBench(b, dir)
	for _, bc := range configs {
		b.Run(bc.name, func(b *testing.B) {
			session := filepath.Join(b.TempDir(), "session.jsonl")
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(session, demo, 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				cmd := exec.Command(pith, "compact", session, "--config", bc.config, "--keep-recent-tokens", "8000")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("pith compact: %v\n%s", err, out)
				}
				// The plugins are the command's children, reaped before it
				// exits: their CPU time is in its rusage as well.
				cpu += childCPU(cmd)
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

type benchConfig struct{ name, config string }

// demoBench builds the example plugins (statically, as make build does)
// into dir (a new temporary directory when "") and returns the demo
// session and the four configurations.
func demoBench(b *testing.B, dir string) ([]byte, []benchConfig) {
	b.Helper()
	demo, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		b.Skip(err)
	}
	if dir == "" {
		dir = b.TempDir()
	}
	names := []string{"guard", "enterprise-summarizer", "instructions-keeper", "branch-notes", "audit"}
	args := []string{"build", "-tags", buildTags, "-o", dir + string(filepath.Separator)}
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
	// one-started is guard alone: the cost of one plugin process per
	// command, the unit the five-plugin figure is made of.
	guardOnly := []map[string]any{{"name": "guard", "path": filepath.Join(dir, "guard"), "priority": 10, "timeout": "60s", "events": events["guard"]}}
	return demo, []benchConfig{
		{"none", writeBenchConfig(b, nil)},
		{"five-with-events", config(true)},
		{"five-all-started", config(false)},
		{"one-started", writeBenchConfig(b, guardOnly)},
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
