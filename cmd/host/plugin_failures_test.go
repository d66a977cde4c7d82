package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pith-dev/pith/sdk/sdktest"
)

// The tests of this file run a real pith process (this test binary set up
// as main sets it up, cliChild) with plugins that fail, and read what a
// newcomer reads on its stderr: one line per failure naming the plugin and
// what it said, the details only with --verbose.

// testPlugin builds one of internal/testplugins for the test.
func testPlugin(t *testing.T, name string) string {
	t.Helper()
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// pithStderr runs pith with args and returns its stderr's lines and its
// exit code.
func pithStderr(t *testing.T, args ...string) (lines []string, code int) {
	t.Helper()
	cmd := cliChild(args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("pith %v: %v", args, err)
	}
	t.Logf("pith %s: exit %d, stderr:\n%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), stderr.String())
	out := strings.TrimRight(stderr.String(), "\n")
	if out == "" {
		return nil, cmd.ProcessState.ExitCode()
	}
	return strings.Split(out, "\n"), cmd.ProcessState.ExitCode()
}

func requireContains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

func requireLacks(t *testing.T, what, text string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(text, w) {
			t.Errorf("%s holds %q:\n%s", what, w, text)
		}
	}
}

// TestPluginExitingAtStartIsOneLine: a plugin that prints why and exits
// before its handshake costs one line on stderr, with its configured name
// and what it printed; go-plugin's error, the handshake and the command
// are shown with --verbose. Its configuration lists no events, so the
// command must wait for it (the case that printed the error twice).
func TestPluginExitingAtStartIsOneLine(t *testing.T) {
	scripted := testPlugin(t, "scripted")
	cfg := writeConfig(t, map[string]any{"name": "boomer", "path": scripted,
		"args": []string{"-fail-start", "starting up\nboom: cannot read /etc/boom.conf: no such file or directory"}})
	path := copyFile(t, "../../examples/demo-session.jsonl")

	lines, code := pithStderr(t, "compact", "--config", cfg, "--keep-recent-tokens", "8000", path)
	if code != 0 {
		t.Errorf("exit %d: a plugin that fails open does not stop the compaction", code)
	}
	if len(lines) != 1 {
		t.Fatalf("want one line on stderr, got %d", len(lines))
	}
	requireContains(t, "the line", lines[0], "boomer", "exit status 1", "starting up", "boom: cannot read /etc/boom.conf: no such file or directory")
	requireLacks(t, "the line", lines[0], "Unrecognized remote plugin message", "[WARN]")

	path = copyFile(t, "../../examples/demo-session.jsonl")
	lines, _ = pithStderr(t, "compact", "--verbose", "--config", cfg, "--keep-recent-tokens", "8000", path)
	verbose := strings.Join(lines, "\n")
	requireContains(t, "--verbose", verbose, "Unrecognized remote plugin message", "handshake=", "command=", scripted+" -fail-start ")

	lines, code = pithStderr(t, "plugins", "check", "--config", cfg)
	if code == 0 || len(lines) != 2 { // the failure, then pith's summary
		t.Fatalf("plugins check: exit %d, %d lines on stderr; want a failure in one line, then the summary", code, len(lines))
	}
	if !strings.HasPrefix(lines[0], "boomer: ") {
		t.Errorf("check's line does not name the plugin: %s", lines[0])
	}
	requireContains(t, "check's line", lines[0], "boom: cannot read /etc/boom.conf")
}

// TestPluginPanicMidCallIsOneLine: a plugin that panics during a call of
// `pith compact` costs one line, naming the plugin and the panic value,
// not the goroutine dump; the dump comes with --verbose. Both panics: one
// the SDK recovers (the call fails, the process lives), and one nothing
// recovers (the process dies). A one-shot command restarts nothing
// afterwards, so nothing says "restarting".
func TestPluginPanicMidCallIsOneLine(t *testing.T) {
	scripted := testPlugin(t, "scripted")
	for _, tc := range []struct{ mode, value string }{
		{"panic", "scripted panics on purpose"},
		{"crash", "panic: scripted crashes on purpose"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := writeConfig(t, map[string]any{"name": "panicky", "path": scripted, "events": []string{"session_before_compact"},
				"args": []string{"-before-compact", tc.mode}})
			path := copyFile(t, "../../examples/demo-session.jsonl")

			lines, code := pithStderr(t, "compact", "--config", cfg, "--keep-recent-tokens", "8000", path)
			if code != 0 {
				t.Errorf("exit %d: a plugin that fails open does not stop the compaction", code)
			}
			if len(lines) != 1 {
				t.Fatalf("want one line on stderr, got %d", len(lines))
			}
			requireContains(t, "the line", lines[0], "panicky", tc.value)
			requireLacks(t, "the line", lines[0], "goroutine", "restarting")

			path = copyFile(t, "../../examples/demo-session.jsonl")
			lines, _ = pithStderr(t, "compact", "--verbose", "--config", cfg, "--keep-recent-tokens", "8000", path)
			verbose := strings.Join(lines, "\n")
			requireContains(t, "--verbose", verbose, "goroutine", "main.go")
			requireLacks(t, "--verbose", verbose, "restarting")
		})
	}
}

// TestPluginHostVersionIsTheSameEverywhere: `pith plugins check` and a
// compaction send plugins the same host_version in Describe, the one
// `pith --version` prints.
func TestPluginHostVersionIsTheSameEverywhere(t *testing.T) {
	automtls := testPlugin(t, "automtls")
	record := filepath.Join(t.TempDir(), "versions")
	cfg := writeConfig(t, map[string]any{"name": "versions", "path": automtls, "events": []string{"session_compact"},
		"args": []string{"-record-host-version", record}})
	if lines, code := pithStderr(t, "plugins", "check", "--config", cfg); code != 0 {
		t.Fatalf("plugins check: exit %d: %v", code, lines)
	}
	path := copyFile(t, "../../examples/demo-session.jsonl")
	if lines, code := pithStderr(t, "compact", "--config", cfg, "--keep-recent-tokens", "8000", path); code != 0 {
		t.Fatalf("compact: exit %d: %v", code, lines)
	}
	cmd := cliChild("--version")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Quote(strings.TrimPrefix(strings.TrimSpace(string(out)), "pith "))
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("host_version sent by check, then by compact: %v; want %s both times", got, want)
	}
}
