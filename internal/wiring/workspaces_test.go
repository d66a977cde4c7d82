package wiring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/workspace"
)

// TestWorkspacesPolicy: a store's session is read only under
// server.workspaceRoot and takes no --workspace; a file of the user's
// own is read under the current directory or --workspace, and a
// workspace elsewhere is not read, with one warning however often the
// engine asks.
func TestWorkspacesPolicy(t *testing.T) {
	cfg := config.Defaults()
	if _, err := Workspaces(cfg, "postgres://db/pith", "a.jsonl", t.TempDir(), hclog.NewNullLogger()); err == nil ||
		!strings.Contains(err.Error(), "--workspace is for a session file of your own") {
		t.Errorf("--workspace with a store session: %v", err)
	}
	open, err := Workspaces(cfg, "postgres://db/pith", "a.jsonl", "", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open(t.TempDir(), workspace.Options{}); !errors.Is(err, workspace.ErrNoWorkspaces) {
		t.Errorf("a store session without server.workspaceRoot: %v", err)
	}

	file := filepath.Join(t.TempDir(), "s.jsonl")
	if _, err := Workspaces(cfg, "", file, filepath.Join(t.TempDir(), "missing"), hclog.NewNullLogger()); err == nil ||
		!strings.Contains(err.Error(), "not a directory") {
		t.Errorf("--workspace of a missing directory: %v", err)
	}
	chosen := t.TempDir()
	var logs bytes.Buffer
	open, err = Workspaces(cfg, "", file, chosen, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := open(chosen, workspace.Options{})
	if err != nil {
		t.Fatalf("the --workspace directory: %v", err)
	}
	ws.Close()
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var nc *workspace.NotChosenError
		if _, err := open(elsewhere, workspace.Options{}); !errors.As(err, &nc) {
			t.Fatalf("a workspace elsewhere: %v", err)
		}
	}
	if n := strings.Count(logs.String(), "the session's workspace is outside the current directory"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
}
