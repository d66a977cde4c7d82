package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCompactAttachesToDebugPlugin: a plugin entry with `reattach` (the
// line the audit example printed in debug mode) makes `pith compact` call
// that running process instead of starting one; the command warns, and the
// plugin ends on its own afterwards, never signalled.
func TestCompactAttachesToDebugPlugin(t *testing.T) {
	_, audit := buildExamplePlugins(t)
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	plugin := exec.Command(audit, "--file", auditFile)
	plugin.Env = append(os.Environ(), "PITH_PLUGIN_DEBUG=1")
	out, err := plugin.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if plugin.ProcessState == nil {
			_ = plugin.Process.Kill()
			_ = plugin.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "PITH_PLUGIN_REATTACH=") {
		t.Fatalf("the plugin in debug mode printed %q, %v", line, err)
	}

	session := copyFile(t, "../../examples/demo-session.jsonl")
	cfg := writeConfig(t, map[string]any{"name": "audit", "reattach": strings.TrimSpace(line)})
	_, stderr, code := runCLI(t, "compact", "--config", cfg, "--keep-recent-tokens", "8000", session)
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "attaching to a plugin running in debug mode") {
		t.Errorf("no warning about attaching: %s", stderr)
	}
	if data, err := os.ReadFile(auditFile); err != nil || !bytes.Contains(data, []byte("session_compact")) {
		t.Fatalf("the attached audit plugin did not record the compaction: %v %q", err, data)
	}
	err = plugin.Wait()
	if ws, ok := plugin.ProcessState.Sys().(syscall.WaitStatus); err != nil || !ok || ws.Signaled() {
		t.Fatalf("the debug plugin ended with %v (%v), want its own exit", plugin.ProcessState, err)
	}
}
