package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/internal/testproc"
)

// buildExamplePlugins compiles the guard and audit example plugins into dir
// with one go build (the two links run in parallel).
func buildExamplePlugins(t *testing.T) (guard, audit string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/pith-dev/pith/plugins/examples/guard",
		"github.com/pith-dev/pith/plugins/examples/audit")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build example plugins: %v\n%s", err, out)
	}
	return filepath.Join(dir, "guard"), filepath.Join(dir, "audit")
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// writeConfig writes a JSON configuration with the given plugin entries.
func writeConfig(t *testing.T, plugins ...map[string]any) string {
	t.Helper()
	if plugins == nil {
		plugins = []map[string]any{}
	}
	data, err := json.Marshal(map[string]any{"plugins": plugins})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pith.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runPluginsCommand(t *testing.T, ctx context.Context, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newPluginsCommand()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

func TestPluginsCheck(t *testing.T) {
	guard, audit := buildExamplePlugins(t)
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	// notPlugin is an executable that never speaks the plugin protocol.
	notPlugin := filepath.Join(t.TempDir(), "not-a-plugin.sh")
	if err := os.WriteFile(notPlugin, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := []map[string]any{
		{"name": "guard", "path": guard, "sha256": fileSum(t, guard), "priority": 10},
		{"name": "audit", "path": audit, "args": []string{"--file", auditFile}},
	}
	ctx := context.Background()

	t.Run("all start", func(t *testing.T) {
		t.Setenv("OPENAI_API_KEY", "sk-host-secret")
		stdout, stderr, err := runPluginsCommand(t, ctx, "check", "--config", writeConfig(t, good...))
		if err != nil {
			t.Fatalf("err %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
		table, envs, _ := strings.Cut(stdout, "\n\n")
		lines := strings.Split(strings.TrimSpace(table), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "PLUGIN") {
			t.Fatalf("table:\n%s", stdout)
		}
		for i, want := range [][]string{
			{"guard", "1.0.0", "session_before_compact", "verified", "ms", "ok"},
			{"audit", "1.0.0", "session_compact,session_tree", "not configured", "ms", "ok"},
		} {
			for _, w := range want {
				if !strings.Contains(lines[i+1], w) {
					t.Errorf("row %q lacks %q", lines[i+1], w)
				}
			}
		}
		if stderr != "" {
			t.Errorf("unexpected stderr: %s", stderr)
		}
		// Names, never values; the host's secret is not among them.
		for _, want := range []string{"guard: HOME", "audit: HOME", " PATH ", "PITH_HOST_PID"} {
			if !strings.Contains(envs, want) {
				t.Errorf("environment section lacks %q:\n%s", want, envs)
			}
		}
		if strings.Contains(stdout, "OPENAI_API_KEY") || strings.Contains(stdout, "sk-host-secret") {
			t.Errorf("a host secret is listed:\n%s", stdout)
		}
		testproc.RequireNoChildren(t)
	})

	t.Run("failures are reported one line each", func(t *testing.T) {
		cfg := writeConfig(t, append(good,
			map[string]any{"name": "tampered", "path": guard, "sha256": strings.Repeat("0", 64)},
			map[string]any{"name": "stranger", "path": notPlugin},
			map[string]any{"name": "misconfigured", "path": audit}, // no --file: exits before the handshake
		)...)
		stdout, stderr, err := runPluginsCommand(t, ctx, "check", "--config", cfg, "--timeout", "5s")
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
		if err == nil || err.Error() != "3 of 5 plugins failed the check" {
			t.Fatalf("err = %v", err)
		}
		for _, want := range []string{"tampered", "MISMATCH", "stranger", "misconfigured", "FAILED"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("table lacks %q:\n%s", want, stdout)
			}
		}
		errLines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(errLines) != 3 {
			t.Fatalf("want one stderr line per failure, got:\n%s", stderr)
		}
		for i, prefix := range []string{"tampered: ", "stranger: ", "misconfigured: "} {
			if !strings.HasPrefix(errLines[i], prefix) {
				t.Errorf("stderr line %q does not start with %q", errLines[i], prefix)
			}
		}
		if !strings.Contains(errLines[0], "sha256") {
			t.Errorf("mismatch reason: %s", errLines[0])
		}
		if !strings.Contains(errLines[2], "audit: --file is required") || strings.Contains(errLines[2], "Unrecognized remote plugin message") {
			t.Errorf("the plugin's own reason is missing: %s", errLines[2])
		}
		testproc.RequireNoChildren(t)
	})

	t.Run("json", func(t *testing.T) {
		cfg := writeConfig(t, good[0], map[string]any{"name": "stranger", "path": notPlugin})
		t.Setenv("PITH_CONFIG", cfg) // no --config: the environment names the file
		stdout, _, err := runPluginsCommand(t, ctx, "check", "--json")
		if err == nil {
			t.Fatal("a binary that is no plugin must fail the check")
		}
		var got struct {
			Config  string
			OK      bool
			Plugins []pluginCheck
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		if got.Config != cfg || got.OK || len(got.Plugins) != 2 {
			t.Fatalf("report %+v", got)
		}
		g, m := got.Plugins[0], got.Plugins[1]
		if !g.OK || g.ReportedName != "guard" || g.Version != "1.0.0" || g.Checksum != "verified" || g.HandshakeMs <= 0 || len(g.Events) != 1 {
			t.Errorf("guard: %+v", g)
		}
		if m.OK || m.Error == "" || m.Checksum != "not configured" || len(m.Events) != 0 {
			t.Errorf("stranger: %+v", m)
		}
		testproc.RequireNoChildren(t)
	})

	t.Run("no plugins", func(t *testing.T) {
		stdout, _, err := runPluginsCommand(t, ctx, "check", "--config", writeConfig(t))
		if err != nil || !strings.HasPrefix(stdout, "no plugins configured in ") {
			t.Fatalf("got %q, %v", stdout, err)
		}
	})

	t.Run("invalid configuration", func(t *testing.T) {
		cfg := writeConfig(t, map[string]any{"name": "x", "path": guard, "failure": "sometimes"})
		_, stderr, err := runPluginsCommand(t, ctx, "check", "--config", cfg)
		if err == nil || !strings.Contains(stderr, "failure") {
			t.Fatalf("got %v, stderr %q", err, stderr)
		}
	})

	// SIGTERM while a plugin hangs in its handshake: the command stops what
	// it started, skips the rest and exits 130.
	t.Run("signal", func(t *testing.T) {
		dir := t.TempDir()
		marker := filepath.Join(dir, "pid")
		slow := filepath.Join(dir, "slow.sh")
		script := "#!/bin/sh\necho $$ > " + marker + ".tmp && mv " + marker + ".tmp " + marker + "\nexec sleep 60\n"
		if err := os.WriteFile(slow, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := writeConfig(t, map[string]any{"name": "slow", "path": slow}, good[0])
		type result struct {
			stdout string
			err    error
		}
		done := make(chan result, 1)
		go func() {
			stdout, _, err := runPluginsCommand(t, ctx, "check", "--config", cfg, "--timeout", "2s")
			done <- result{stdout, err}
		}()
		var pid int
		for pid == 0 { // wait for the slow plugin to run: the handler is installed by then
			if data, err := os.ReadFile(marker); err == nil {
				pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
			} else {
				time.Sleep(10 * time.Millisecond)
			}
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r := <-done
		var ee *exitError
		if !errors.As(r.err, &ee) || ee.code != 130 {
			t.Fatalf("err = %v, want exit 130", r.err)
		}
		if !strings.Contains(r.stdout, "slow") || strings.Contains(r.stdout, "guard  1.0.0") {
			t.Errorf("guard must not be started after the signal:\n%s", r.stdout)
		}
		testproc.RequireNoChildren(t)
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("slow plugin %d still running", pid)
		}
	})
}
