package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// BenchmarkCompactDemoServe is `pith compact --serve ADDR NAME` of a fresh
// copy of the demo session for each iteration, against a running `pith
// serve` with no plugins and with the five examples (each listing its
// events): the compaction a CLI user gets when the plugins are started
// once for many commands. cpu-ms/op counts the command's CPU, the
// daemon's and its running plugins' (read from /proc before and after),
// so that the work moved into the daemon is not hidden.
func BenchmarkCompactDemoServe(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc for the daemon's CPU time")
	}
	dir := b.TempDir()
	pith := buildPith(b, dir)
	demo, configs := demoBench(b, dir)
	for _, bc := range configs[:2] { // none, five-with-events
		b.Run(bc.name, func(b *testing.B) {
			root := filepath.Join(b.TempDir(), "sessions")
			if err := os.Mkdir(root, 0o755); err != nil {
				b.Fatal(err)
			}
			cfg := serveBenchConfig(b, bc.config, root)
			ready := filepath.Join(b.TempDir(), "ready")
			daemon := exec.Command(pith, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--ready-file", ready)
			if err := daemon.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				_ = daemon.Process.Signal(syscall.SIGTERM)
				_ = daemon.Wait()
			})
			addr := waitReady(b, ready)
			n := 0
			compact := func() time.Duration {
				n++
				name := fmt.Sprintf("s%d.jsonl", n)
				if err := os.WriteFile(filepath.Join(root, name), demoWithID(demo, n), 0o644); err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command(pith, "compact", "--serve", addr, name)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("pith compact --serve: %v\n%s", err, out)
				}
				return childCPU(cmd)
			}
			compact() // the daemon starts its plugins at its first compaction
			var cpu time.Duration
			before := treeCPU(b, daemon.Process.Pid)
			for b.Loop() {
				cpu += compact()
			}
			cpu += treeCPU(b, daemon.Process.Pid) - before
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// serveBenchConfig is the plugins of the benchmark configuration at
// plugins, with sessions.root and the keep-recent-tokens the CLI
// benchmarks pass as a flag.
func serveBenchConfig(b *testing.B, plugins, root string) string {
	b.Helper()
	var c map[string]any
	data, err := os.ReadFile(plugins)
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil {
		b.Fatal(err)
	}
	c["sessions"] = map[string]any{"root": root}
	c["compaction"] = map[string]any{"keepRecentTokens": 8000}
	if data, err = json.Marshal(c); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "serve.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// waitReady waits for the daemon's --ready-file and returns its address.
func waitReady(b *testing.B, path string) string {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(data)) > 0 {
			return string(bytes.TrimSpace(data))
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal("pith serve did not write its ready file within 30s")
	return ""
}

// treeCPU is procCPU of pid and of every process below it that is still
// running: the daemon's plugins, whose time reaches the daemon's own
// figures only once they have exited and been reaped.
func treeCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	return procCPU(b, pid) + childrenCPU(pid)
}

// childrenCPU is the CPU time of pid's running descendants; one that ends
// while it is read is left out (its parent's figures have it once reaped).
func childrenCPU(pid int) time.Duration {
	var total time.Duration
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err != nil {
			continue // the thread has ended
		}
		for _, f := range strings.Fields(string(data)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if cpu, err := statCPU(child); err == nil {
				total += cpu + childrenCPU(child)
			}
		}
	}
	return total
}

// procCPU is the user and system CPU time pid has used so far, children
// it has reaped included (its plugins, once they exit).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	cpu, err := statCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// statCPU reads procCPU's figures from /proc/PID/stat.
func statCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime is field 14, stime 15, cutime 16, cstime 17.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	var ticks int64
	for _, f := range fields[11:15] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go runs on.
const clockTicks = 100

// demoSessionID is the header id of examples/demo-session.jsonl.
const demoSessionID = "55605c23-3a44-4837-b751-490d998e8b52"

// demoWithID is the demo session with a header id of its own for n: a
// daemon holds one session per id and refuses a second file with an id
// it has open.
func demoWithID(demo []byte, n int) []byte {
	id := fmt.Sprintf("%08x%s", n, demoSessionID[8:])
	return bytes.Replace(demo, []byte(`"id":"`+demoSessionID+`"`), []byte(`"id":"`+id+`"`), 1)
}
