package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionCommand: pith version prints what --version does.
func TestVersionCommand(t *testing.T) {
	cmd, _, code := runCLI(t, "version")
	flag, _, _ := runCLI(t, "--version")
	if code != 0 || cmd != flag || !strings.HasPrefix(cmd, "pith ") {
		t.Fatalf("version: exit %d, %q; --version %q", code, cmd, flag)
	}
}

// TestVersionStampedByTheBuild builds pith as make build does, with the
// version set by -ldflags -X, and runs it: both ways of asking print the
// stamped version.
func TestVersionStampedByTheBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pith")
	}
	bin := filepath.Join(t.TempDir(), "pith")
	build := exec.Command("go", "build", "-ldflags", "-X main.stampedVersion=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || string(out) != "pith v9.8.7-test\n" {
			t.Errorf("pith %s: %v, %q", args[0], err, out)
		}
	}
}
