package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runConfig runs `pith config ARGS...` and returns its output streams.
func runConfig(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newConfigCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage = true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigValidateExamples(t *testing.T) {
	examples, err := filepath.Glob(filepath.Join("..", "..", "config", "examples", "*"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	stdout, stderr, err := runConfig(t, append([]string{"validate", "--no-env"}, examples...)...)
	if err != nil {
		t.Fatalf("examples must validate: %v\n%s", err, stderr)
	}
	for _, e := range examples {
		if !strings.Contains(stdout, e+": ok") {
			t.Errorf("no ok line for %s in:\n%s", e, stdout)
		}
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	good := write(t, dir, "good.yaml", "compaction:\n  keepRecentTokens: 5000\n")
	bad := write(t, dir, "bad.yaml", `
compaction:
  reserveTokens: 0
  keepRecentToken: 5
plugins:
  - {name: audit, path: ./nope, failure: maybe}
`)
	stdout, stderr, err := runConfig(t, "validate", "--no-env", good, bad)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 configuration files invalid (4 problems)") {
		t.Fatalf("want a failure counting the bad file, got %v", err)
	}
	if !strings.Contains(stdout, good+": ok") {
		t.Errorf("the good file must be reported ok:\n%s", stdout)
	}
	for _, want := range []string{
		bad + `: compaction.keepRecentToken: unknown key (did you mean "keepRecentTokens"?)`,
		bad + ": compaction.reserveTokens: must be > 0, got 0",
		bad + ": plugins[0].path: ",
		bad + `: plugins[0].failure: must be one of open|closed, got "maybe"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, stderr, err := runConfig(t, "validate", bad); err == nil || err.Error() != bad+": configuration invalid (4 problems)" {
		t.Errorf("one bad file: got %v\n%s", err, stderr)
	}
	if _, stderr, err := runConfig(t, "validate", filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("a missing file must fail naming it: %v %s", err, stderr)
	}
	if _, _, err := runConfig(t, "validate"); err == nil {
		t.Error("validate needs a file")
	}
}

func TestConfigShowMasksSecrets(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "audit")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := write(t, dir, "pith.yaml", `
compaction:
  remoteEndpoint:
    url: https://sum.example/v1
    authEnv: SUM_TOKEN
summarizer:
  provider: openai
  model: gpt-4o-mini
  apiKeyEnv: OPENAI_API_KEY
plugins:
  - name: audit
    path: ./audit
    args: ["--token", "hunter3"]
    env: {AUDIT_LEVEL: info, API_KEY: hunter4, OTHER: sk-hunter2hunter2hunter2}
`)
	t.Setenv("PITH_COMPACTION__KEEPRECENTTOKENS", "4321")
	for _, format := range []string{"yaml", "toml", "json"} {
		stdout, stderr, err := runConfig(t, "show", "--config", path, "--format", format)
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, stderr)
		}
		for _, secret := range []string{"hunter2", "hunter3", "hunter4"} {
			if strings.Contains(stdout, secret) {
				t.Errorf("%s: show prints the secret %q:\n%s", format, secret, stdout)
			}
		}
		for _, want := range []string{"4321", "OPENAI_API_KEY", "SUM_TOKEN", "AUDIT_LEVEL", "gpt-4o-mini", exe} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: show lacks %q:\n%s", format, want, stdout)
			}
		}
	}
}

func TestConfigShowDefaultsAndErrors(t *testing.T) {
	t.Setenv("PITH_CONFIG", "")
	stdout, _, err := runConfig(t, "show", "--no-env")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "keepRecentTokens: 20000") || !strings.Contains(stdout, "(no file)") {
		t.Errorf("defaults not shown:\n%s", stdout)
	}
	if _, _, err := runConfig(t, "show", "--format", "xml"); err == nil {
		t.Error("an unknown format must be an error")
	}
	t.Setenv("PITH_RETRY__MAXRETRIES", "lots")
	_, stderr, err := runConfig(t, "show")
	if err == nil || !strings.Contains(stderr, "retry.maxRetries: must be an integer") {
		t.Errorf("a bad override must fail naming the key: %v\n%s", err, stderr)
	}
}
