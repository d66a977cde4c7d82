package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/testproc"
)

// TestShippedExamplesValidateStrict: `pith config validate --strict`, as a
// new user runs it on the examples the repository ships, passes on every
// one of them without a warning.
func TestShippedExamplesValidateStrict(t *testing.T) {
	examples, err := filepath.Glob("../../config/examples/*")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	stdout, stderr, code := runCLI(t, append([]string{"config", "validate", "--no-env", "--strict"}, examples...)...)
	if code != 0 || stderr != "" || strings.Count(stdout, ": ok\n") != len(examples) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestConfigExitCodes: a configuration file the user named that does not
// exist is a usage error (2), with one line naming the file, whether named
// by --config or PITH_CONFIG and whichever command reads it; an invalid
// one is 2 for `plugins check` as for the other commands.
func TestConfigExitCodes(t *testing.T) {
	t.Setenv(config.PathEnv, "")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	session := copyFile(t, "../../examples/demo-session.jsonl")
	for _, args := range [][]string{
		{"compact", "--config", missing, session},
		{"navigate", "--config", missing, "--to", demoBranchPoint, session},
		{"prune", "--config", missing, session},
		{"plugins", "check", "--config", missing},
		{"config", "show", "--config", missing},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, missing) {
			t.Errorf("pith %v: exit %d, stderr %q; want 2 and one line naming the file", args[:2], code, stderr)
		}
	}
	t.Setenv(config.PathEnv, missing)
	if _, stderr, code := runCLI(t, "compact", session); code != exitUsage || !strings.Contains(stderr, missing) {
		t.Errorf("PITH_CONFIG missing: exit %d, stderr %q", code, stderr)
	}
	t.Setenv(config.PathEnv, "")
	invalid := writeConfig(t, map[string]any{"name": "x", "path": "/bin/true", "failure": "sometimes"})
	if _, stderr, code := runCLI(t, "plugins", "check", "--config", invalid); code != exitUsage || !strings.Contains(stderr, "failure") {
		t.Errorf("plugins check, invalid configuration: exit %d, stderr %q", code, stderr)
	}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("read configuration: %w", config.ErrNotFound), exitUsage},
		{configRejected("x: configuration invalid", fmt.Errorf("x: %w", config.ErrInvalid)), exitUsage},
		{configRejected("x: configuration invalid", errors.New("permission denied")), exitFailure},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestDefaultConfigLocation: without --config or PITH_CONFIG a command
// reads $XDG_CONFIG_HOME/pith/config.yaml, else ~/.config/pith/config.yaml,
// when it exists; PITH_CONFIG and --config come first.
func TestDefaultConfigLocation(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv(config.PathEnv, "")
	show := func() string {
		t.Helper()
		stdout, stderr, code := runCLI(t, "config", "show", "--no-env")
		if code != 0 {
			t.Fatalf("config show: exit %d: %s", code, stderr)
		}
		return stdout
	}
	if out := show(); !strings.Contains(out, "defaults < (no file)") {
		t.Fatalf("no file anywhere, yet:\n%s", out)
	}
	inHome := writeAt(t, filepath.Join(home, ".config", "pith", "config.yaml"), "compaction:\n  keepRecentTokens: 12345\n")
	if out := show(); !strings.Contains(out, "defaults < "+inHome+" <") || !strings.Contains(out, "keepRecentTokens: 12345") {
		t.Fatalf("~/.config/pith/config.yaml not read:\n%s", out)
	}
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	inXDG := writeAt(t, filepath.Join(xdg, "pith", "config.yaml"), "compaction:\n  keepRecentTokens: 23456\n")
	if out := show(); !strings.Contains(out, "defaults < "+inXDG+" <") || !strings.Contains(out, "keepRecentTokens: 23456") {
		t.Fatalf("$XDG_CONFIG_HOME/pith/config.yaml not read:\n%s", out)
	}
	byEnv := writeAt(t, filepath.Join(t.TempDir(), "env.yaml"), "compaction:\n  keepRecentTokens: 34567\n")
	t.Setenv(config.PathEnv, byEnv)
	if out := show(); !strings.Contains(out, "keepRecentTokens: 34567") {
		t.Fatalf("PITH_CONFIG does not win over the default location:\n%s", out)
	}
	byFlag := writeAt(t, filepath.Join(t.TempDir(), "flag.yaml"), "compaction:\n  keepRecentTokens: 45678\n")
	if stdout, _, _ := runCLI(t, "config", "show", "--no-env", "--config", byFlag); !strings.Contains(stdout, "keepRecentTokens: 45678") {
		t.Fatalf("--config does not win:\n%s", stdout)
	}
	// A command that compacts reads it too: an invalid default file is
	// reported, naming it, rather than silently skipped.
	t.Setenv(config.PathEnv, "")
	writeAt(t, inXDG, "compaction:\n  keepRecentTokens: many\n")
	session := copyFile(t, "../../examples/demo-session.jsonl")
	if _, stderr, code := runCLI(t, "compact", session); code != exitUsage || !strings.Contains(stderr, inXDG) {
		t.Fatalf("invalid default file: exit %d, stderr %q", code, stderr)
	}
}

// TestPluginPathsRelativeToConfig: a configuration in one directory names
// its plugin and the plugin's output file relative to itself; the command
// runs from another directory; the plugin starts and writes next to the
// configuration, nothing in the working directory.
func TestPluginPathsRelativeToConfig(t *testing.T) {
	_, audit := buildExamplePlugins(t)
	confDir := t.TempDir()
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	writeAt(t, filepath.Join(confDir, "plugins", "audit"), string(data))
	if err := os.Chmod(filepath.Join(confDir, "plugins", "audit"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeAt(t, filepath.Join(confDir, "pith.yaml"), `plugins:
  - name: audit
    path: plugins/audit
    args: ["--file", "./audit.jsonl"]
    events: [session_compact]
`)
	session := copyFile(t, "../../examples/demo-session.jsonl")
	work := t.TempDir()
	t.Chdir(work)
	rel, err := filepath.Rel(work, filepath.Join(confDir, "pith.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, "compact", "--config", rel, "--keep-recent-tokens", "8000", session); code != 0 {
		t.Fatalf("compact: exit %d: %s", code, stderr)
	}
	if got, err := os.ReadFile(filepath.Join(confDir, "audit.jsonl")); err != nil || !strings.Contains(string(got), "session_compact") {
		t.Errorf("no audit record next to the configuration: %v %q", err, got)
	}
	if entries, _ := os.ReadDir(work); len(entries) > 0 {
		t.Errorf("the working directory got %v", entries)
	}
	testproc.RequireNoChildren(t)
}

func writeAt(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
