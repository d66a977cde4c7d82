package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadFlagValuesExit2: a flag given a value it does not take is a
// usage error, exit 2 as the table says, whichever command checks it.
func TestBadFlagValuesExit2(t *testing.T) {
	path := copyFile(t, demoSession)
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"strategy":           {[]string{"compact", path, "--strategy", "bogus"}, `unknown compaction strategy "bogus" (summary or explore)`},
		"calibration":        {[]string{"compact", path, "--calibration", "bogus"}, `unknown calibration method "bogus" (delta or total)`},
		"keep negative":      {[]string{"compact", path, "--keep-recent-tokens", "-5"}, "--keep-recent-tokens must be > 0"},
		"reserve zero":       {[]string{"compact", path, "--dry-run", "--reserve-tokens", "0"}, "--reserve-tokens must be > 0"},
		"listen any":         {[]string{"view", empty, "--listen", "0.0.0.0:0"}, "only a loopback address"},
		"listen no port":     {[]string{"view", empty, "--listen", "0.0.0.0"}, "missing port"},
		"config format":      {[]string{"config", "show", "--format", "xml"}, `--format "xml"`},
		"tree limit":         {[]string{"tree", path, "--limit", "-1"}, "--limit must be 0 (all) or more"},
		"export json no out": {[]string{"export", "--store", t.TempDir(), "--json", "s.jsonl"}, "--json needs --out"},
	} {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, %q; want exit 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// TestUnknownProviderComesFirst: --provider bogus is reported as an
// unknown provider, with the known ones, not as one lacking a model.
func TestUnknownProviderComesFirst(t *testing.T) {
	for _, cmd := range [][]string{{"compact", copyFile(t, demoSession)}, {"navigate", copyFile(t, demoSession), "--to", "x"}} {
		_, stderr, code := runCLI(t, append(cmd, "--provider", "bogus")...)
		if code != exitUsage || !strings.Contains(stderr, `unknown summarizer provider "bogus" (builtin, openai, anthropic or remote)`) ||
			strings.Contains(stderr, "needs a model") {
			t.Errorf("%s: exit %d, %q", cmd[0], code, stderr)
		}
	}
}

// TestDryRunNothingToCompact: --dry-run says "nothing to compact" as the
// compaction does, with the same line and exit code 3.
func TestDryRunNothingToCompact(t *testing.T) {
	path := copyFile(t, demoSession)
	if _, stderr, code := runCLI(t, "compact", path, "--keep-recent-tokens", "8000"); code != 0 {
		t.Fatalf("compact: exit %d, %s", code, stderr)
	}
	_, real, realCode := runCLI(t, "compact", path)
	out, dry, dryCode := runCLI(t, "compact", path, "--dry-run")
	if realCode != exitNothing || dryCode != exitNothing || dry != real || out != "" {
		t.Fatalf("compact: exit %d, %q; --dry-run: exit %d, %q, stdout %q", realCode, real, dryCode, dry, out)
	}
	out, stderr, code := runCLI(t, "compact", path, "--dry-run", "--json")
	if code != exitNothing || stderr != real || !strings.Contains(out, `"nothingToCompact":true`) {
		t.Fatalf("--dry-run --json: exit %d, %q, stdout %q", code, stderr, out)
	}
}

// TestUnknownCommandSuggests: a misspelt command gets cobra's
// suggestion, on the one line of the error.
func TestUnknownCommandSuggests(t *testing.T) {
	_, stderr, code := runCLI(t, "contex")
	if code != exitUsage || !strings.Contains(stderr, `did you mean "context"?`) || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	if _, stderr, _ := runCLI(t, "zzzzzz"); strings.Contains(stderr, "did you mean") {
		t.Fatalf("a suggestion for nothing alike: %q", stderr)
	}
}

// TestMissingArgumentIsNamed: a missing positional argument is named,
// with what it is, not counted.
func TestMissingArgumentIsNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compact"}, "compact: missing FILE (the session file"},
		{[]string{"tree"}, "tree: missing FILE (the session file"},
		{[]string{"view"}, "view: missing FILE (the session file, or a directory of them)"},
		{[]string{"label", "s.jsonl"}, "label: missing ID (the id of the entry to label)"},
		{[]string{"import", "--store", "d", "s.jsonl"}, "import: missing NAME (the name to store it under)"},
		{[]string{"propose", "compact"}, "propose: missing FILE (the session file)"},
		{[]string{"config", "validate"}, "validate: missing FILE (a configuration file to check)"},
		{[]string{"tree", "a", "b"}, `tree: unexpected argument "b" (it takes FILE)`},
		{[]string{"version", "x"}, `version: unexpected argument "x" (it takes no arguments)`},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "arg(s)") {
			t.Errorf("pith %s: exit %d, %q; want %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// TestViewOfAnEmptyFileNamesIt: the error names the file.
func TestViewOfAnEmptyFileNamesIt(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	_, stderr, code := runCLI(t, "view", empty)
	if code == 0 || !strings.Contains(stderr, empty+": not a pi session file: the file is empty") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
}
