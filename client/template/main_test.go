package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
)

// TestAgentAgainstARealDaemon runs the agent against a real `pith serve`
// with sessions in a temporary directory: the client and the daemon of the
// same Pith checkout, as a user runs them.
func TestAgentAgainstARealDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts pith serve")
	}
	addr := startDaemon(t, pithBinary(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var out bytes.Buffer
	if err := run(ctx, addr, "demo/hello.jsonl", &out); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^session \S+ \(demo/hello.jsonl\): 0 messages, 0 tokens of context\n$`).Match(out.Bytes()) {
		t.Fatalf("a new session: %q", out.String())
	}

	c, err := client.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Open(ctx, "demo/hello.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	msg := json.RawMessage(`{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("hello ", 100) + `"}],"timestamp":1}`)
	if _, err := s.AppendMessages(ctx, msg); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, addr, "demo/hello.jsonl", &out); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`: 1 messages, [1-9]\d* tokens of context\n$`).Match(out.Bytes()) {
		t.Fatalf("after an append: %q", out.String())
	}
}

// pithBinary is $PITH_BIN, or pith built from the checkout go.mod's
// replace points at (go list names its directory).
func pithBinary(t *testing.T) string {
	if bin := os.Getenv("PITH_BIN"); bin != "" {
		return bin
	}
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/pith-dev/pith").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/pith-dev/pith: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "pith")
	build := exec.Command("go", "build", "-o", bin, "./cmd/host")
	build.Dir = strings.TrimSpace(string(dir))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build pith in %s: %v\n%s", build.Dir, err, out)
	}
	return bin
}

// startDaemon starts `pith serve` on a free loopback port and returns the
// address it printed; the daemon is stopped with SIGTERM, as a user stops
// it, when the test ends.
func startDaemon(t *testing.T, bin string) string {
	dir := t.TempDir()
	config := filepath.Join(dir, "pith.yaml")
	if err := os.WriteFile(config, []byte("sessions:\n  root: ./sessions\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", config, "--listen", "127.0.0.1:0")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("pith serve's log:\n%s", logs.String())
		}
	})
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on ") {
		t.Fatalf("pith serve printed %q (%v)", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }() // a full pipe would stall the daemon
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
}
