package main

import (
	"strings"
	"testing"
)

// complete runs cobra's __complete command, as the shell scripts of
// pith completion do, and returns the candidates (without the directive
// line).
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	stdout, stderr, code := runCLI(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %s: exit %d, %s", strings.Join(args, " "), code, stderr)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if !strings.HasPrefix(line, ":") {
			out = append(out, line)
		}
	}
	return out
}

// TestCompletionOfFlagValues: the words a flag takes are completed.
func TestCompletionOfFlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compact", "s.jsonl", "--strategy", ""}, "summary explore"},
		{[]string{"compact", "s.jsonl", "--calibration", ""}, "delta total"},
		{[]string{"compact", "s.jsonl", "--provider", ""}, "builtin openai anthropic remote"},
		{[]string{"navigate", "s.jsonl", "--provider", ""}, "builtin openai anthropic remote"},
		{[]string{"config", "show", "--format", ""}, "yaml toml json"},
	} {
		if got := strings.Join(complete(t, tc.args...), " "); got != tc.want {
			t.Errorf("%s: %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}

// TestCompletionOfEntryIDs: --to and --leaf complete the ids of the
// session FILE names, each with its one-line description (and label).
func TestCompletionOfEntryIDs(t *testing.T) {
	got := complete(t, "navigate", demoSession, "--to", "1d30")
	if len(got) != 1 || !strings.HasPrefix(got[0], "1d3041c8\t[bom-fix] assistant: Fixed.") {
		t.Fatalf("--to 1d30: %q", got)
	}
	all := complete(t, "context", demoSession, "--leaf", "")
	if len(all) != 37 {
		t.Fatalf("--leaf: %d candidates, want the 37 entries: %q", len(all), all)
	}
	for _, c := range all {
		id, desc, ok := strings.Cut(c, "\t")
		if !ok || len(id) != 8 || desc == "" {
			t.Fatalf("candidate %q is not an id and its description", c)
		}
	}
	if got := complete(t, "context", "--leaf", ""); len(got) != 0 {
		t.Fatalf("no FILE yet: %q", got)
	}
}
