package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/sdk/sdktest"
	"github.com/pith-dev/pith/store"
	"github.com/spf13/cobra"
)

func TestExitCodeMapping(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("disk on fire"), 1},
		{usageError{errors.New("bad flag")}, 2},
		{fmt.Errorf("pith.yaml: %w", config.ErrInvalid), 2},
		{fmt.Errorf("x: %w", config.ErrSyntax), 2},
		{fmt.Errorf("%w: empty session", compaction.ErrNothingToCompact), 3},
		{fmt.Errorf("b: %w", branch.ErrNothingToSummarize), 3},
		{fmt.Errorf("%w by plugin %q", engine.ErrCancelled, "guard"), 4},
		{branch.ErrCancelled, 4},
		{fmt.Errorf("x: %w (%w)", engine.ErrCompactingElsewhere, session.ErrLeaseHeld), 5},
		{fmt.Errorf("label: %w", session.ErrConflict), 5},
		{fmt.Errorf("compaction: %w", store.ErrLeaseLost), 5},
		{fmt.Errorf("summarize: %w", context.Canceled), 130},
		{&exitError{code: 130, err: errors.New("interrupted")}, 130},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestExitCodesOfTheCLI(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"compact", "--nope", "x"}, {"compact"}, {"label", "only-a-file"}, {"config", "show", "extra"}} {
		if _, stderr, code := runCLI(t, args...); code != exitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("pith %v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("compaction:\n  reserveTokens: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, "config", "validate", bad); code != exitUsage {
		t.Errorf("invalid configuration: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "compact", filepath.Join(t.TempDir(), "missing.jsonl")); code != exitFailure {
		t.Errorf("missing file: exit %d, %s", code, stderr)
	}
	if out, _, code := runCLI(t, "--version"); code != 0 || !strings.HasPrefix(out, "pith ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

func TestExitNothingToCompact(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	if _, stderr, code := runCLI(t, "compact", path); code != 0 {
		t.Fatalf("compact: %s", stderr)
	}
	if _, stderr, code := runCLI(t, "compact", path); code != exitNothing {
		t.Errorf("compacting a compacted session: exit %d, %s", code, stderr)
	}
}

func TestExitCancelledByAPlugin(t *testing.T) {
	guard := sdktest.Build(t, "github.com/pith-dev/pith/internal/testplugins/guard")
	path := copyFile(t, "../../examples/demo-session.jsonl")
	out, stderr, code := runCLI(t, "tree", "--json", path)
	var tree struct {
		LeafID string `json:"leafId"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &tree) != nil || tree.LeafID == "" {
		t.Fatalf("tree: %d %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "label", path, tree.LeafID, "no-compact"); code != 0 {
		t.Fatalf("label: %s", stderr)
	}
	cfg := writeConfig(t, map[string]any{"name": "guard", "path": guard})
	if _, stderr, code := runCLI(t, "compact", "--config", cfg, path); code != exitCancelled {
		t.Errorf("compaction cancelled by the guard: exit %d, %s", code, stderr)
	}
}

func TestFormatVersion(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	if got, want := formatVersion(info), "v1.2.3 (0123456789ab+dirty, 2026-11-30T12:00:00Z)"; got != want {
		t.Errorf("formatVersion = %q, want %q", got, want)
	}
	if got := formatVersion(&debug.BuildInfo{}); got != "(devel)" {
		t.Errorf("formatVersion(empty) = %q", got)
	}
}

func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" {
			return // cobra's own
		}
		if c.Example == "" {
			t.Errorf("%q has no Example section", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}

func TestPruneRestoreNeverPruned(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	out, stderr, code := runCLI(t, "prune", "--restore", path)
	if code != 0 || !strings.Contains(out, "nothing to restore") || strings.Contains(out, "restored 0") {
		t.Errorf("prune --restore of a never-pruned file: exit %d, %q %q", code, out, stderr)
	}
	if _, err := os.Stat(path + ".pruned.jsonl"); err == nil {
		t.Error("an archive was created")
	}
}

func TestKeepRecentTokensHelpShowsOneDefault(t *testing.T) {
	out, _, _ := runCLI(t, "compact", "--help")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "--keep-recent-tokens") || strings.Contains(line, "--reserve-tokens") {
			if strings.Count(line, "default") != 1 {
				t.Errorf("help line shows %d defaults: %q", strings.Count(line, "default"), line)
			}
		}
	}
}
