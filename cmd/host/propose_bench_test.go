package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/propose"
)

// BenchmarkProposeProcess is what a one-shot `pith propose compact` adds
// to a pi compaction: the whole process on the demo session, with no
// plugins and with the five example plugins, the built-in summarizer
// standing in for the model (its own time, a few milliseconds, is in
// both; the plugins' cost is the difference). The file is never written,
// so one copy serves every iteration.
func BenchmarkProposeProcess(b *testing.B) {
	dir := b.TempDir()
	pith := filepath.Join(dir, "pith")
	if out, err := exec.Command("go", "build", "-o", pith, ".").CombinedOutput(); err != nil {
		b.Fatalf("build pith: %v\n%s", err, out)
	}
	demo, configs := demoBench(b, dir)
	session := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(session, demo, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range configs[:2] {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(pith, "propose", "compact", session, "--config", bc.config)
				cmd.Stdin = strings.NewReader(`{"reason":"threshold"}`)
				out, err := cmd.Output()
				if err != nil || !bytes.Contains(out, []byte(`"outcome":"compacted"`)) {
					b.Fatalf("pith propose: %v\n%s", err, out)
				}
			}
		})
	}
}

// BenchmarkProposeWarm is the same through a warm `pith serve` (plugins
// started once): one Propose call per iteration over loopback.
func BenchmarkProposeWarm(b *testing.B) {
	dir := b.TempDir()
	pith := filepath.Join(dir, "pith")
	if out, err := exec.Command("go", "build", "-o", pith, ".").CombinedOutput(); err != nil {
		b.Fatalf("build pith: %v\n%s", err, out)
	}
	demo, configs := demoBench(b, dir)
	root := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "demo.jsonl"), demo, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range configs[:2] {
		b.Run(bc.name, func(b *testing.B) {
			data, err := os.ReadFile(bc.config)
			if err != nil {
				b.Fatal(err)
			}
			var cfg map[string]any
			if err := json.Unmarshal(data, &cfg); err != nil {
				b.Fatal(err)
			}
			cfg["sessions"] = map[string]any{"root": root}
			cfg["server"] = map[string]any{"shutdownTimeout": "5s"}
			cfgPath := filepath.Join(b.TempDir(), "serve.json")
			data, _ = json.Marshal(cfg)
			if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(pith, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				_ = cmd.Wait()
			}()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				b.Fatalf("pith serve did not start: %v", err)
			}
			c, err := client.Dial(strings.TrimSpace(strings.TrimPrefix(line, "listening on ")))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			call := func() {
				raw, err := c.Propose(ctx, "demo.jsonl", propose.OpCompact, json.RawMessage(`{"reason":"threshold"}`), nil)
				if err != nil || !bytes.Contains(raw, []byte(`"outcome":"compacted"`)) {
					b.Fatalf("propose: %v %s", err, raw)
				}
			}
			call() // the plugins' first calls warm them up
			for b.Loop() {
				call()
			}
		})
	}
}
