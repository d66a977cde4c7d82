package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// readCall is an assistant message whose read tool call names path: what
// compaction.rehydrate re-reads after a compaction.
func readCall(path string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":%q}}],"provider":"test","model":"m1","stopReason":"toolUse","timestamp":%d}`,
		path, time.Now().UnixMilli()))
}

// rehydrated compacts a session created by a client with cwd, whose
// history reads file, and returns the context after it.
func rehydrated(t *testing.T, cfg *config.Config, cwd, file string) string {
	t.Helper()
	return rehydratedAs(t, cfg, "", "ws.jsonl", cwd, file)
}

// rehydratedAs is rehydrated for the session name, created by a client
// with token (none when "").
func rehydratedAs(t *testing.T, cfg *config.Config, token, name, cwd, file string) string {
	t.Helper()
	cfg.Sessions.Root = t.TempDir()
	h := startServer(t, cfg)
	c := h.client
	if token != "" {
		var err error
		if c, err = client.Dial(h.addr, client.WithToken(token)); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	ctx := context.Background()
	s, err := c.Create(ctx, name, cwd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("look", 200), readCall(file), userMsg("more", 400), assistantMsg("ok", 400), userMsg("last", 400)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range got.Messages {
		b.Write(m)
	}
	return b.String()
}

// A client names its session's cwd; the daemon must not read the files
// of any directory a client names. Before server.workspaceRoot, a client
// that created a session with cwd "/" and a read of etc/… in its history
// got that file back after a compaction (compaction.rehydrate), as the
// daemon's user could read it.
func TestWorkspaceReadsNeedWorkspaceRoot(t *testing.T) {
	secretDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(secretDir, "secret.txt"), []byte("daemon-secret-42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.Compaction.Rehydrate.Files = 3
	if got := rehydrated(t, cfg, secretDir, "secret.txt"); strings.Contains(got, "daemon-secret-42") {
		t.Fatal("the daemon read a file of a directory the client named (no server.workspaceRoot)")
	}

	// Under a workspace root: only cwds inside it are read.
	root := t.TempDir()
	cfg.Server.WorkspaceRoot = root
	if got := rehydrated(t, cfg, secretDir, "secret.txt"); strings.Contains(got, "daemon-secret-42") {
		t.Fatal("the daemon read a file of a cwd outside server.workspaceRoot")
	}
	ws := filepath.Join(root, "team", "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main // workspace-file-7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := rehydrated(t, cfg, ws, "main.go"); !strings.Contains(got, "workspace-file-7") {
		t.Fatal("a file of a cwd inside server.workspaceRoot was not re-read")
	}
	// ".." and a link inside the root that leads out are outside.
	if got := rehydrated(t, cfg, filepath.Join(root, "..", filepath.Base(secretDir)), "secret.txt"); strings.Contains(got, "daemon-secret-42") {
		t.Fatal("a cwd climbing out of server.workspaceRoot with .. was read")
	}
	if err := os.Symlink(secretDir, filepath.Join(root, "team", "out")); err != nil {
		t.Fatal(err)
	}
	if got := rehydrated(t, cfg, filepath.Join(root, "team", "out"), "secret.txt"); strings.Contains(got, "daemon-secret-42") {
		t.Fatal("a cwd that is a link inside server.workspaceRoot leading out was read")
	}
}

// A tenant's sessions read workspaces only in the tenant's part of
// server.workspaceRoot (the directory named as its token's prefix): team-a
// names a cwd in team-b's workspace, and its compaction must not bring
// team-b's files into team-a's context.
func TestWorkspaceRootPerTenant(t *testing.T) {
	root := t.TempDir()
	for _, team := range []string{"team-a", "team-b"} {
		ws := filepath.Join(root, team, "proj")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("notes of "+team+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t.TempDir())
	cfg.Compaction.Rehydrate.Files = 3
	cfg.Server.WorkspaceRoot = root
	cfg.Server.Tokens = []config.Token{
		{Name: "a", SHA256: HashToken("a-token"), Prefix: "team-a/"},
		{Name: "b", SHA256: HashToken("b-token"), Prefix: "team-b/"},
	}
	if got := rehydratedAs(t, cfg, "a-token", "team-a/s.jsonl", filepath.Join(root, "team-b", "proj"), "notes.txt"); strings.Contains(got, "notes of team-b") {
		t.Fatal("team-a's compaction read a file of team-b's workspace")
	}
	if got := rehydratedAs(t, cfg, "a-token", "team-a/s.jsonl", filepath.Join(root, "team-a", "proj"), "notes.txt"); !strings.Contains(got, "notes of team-a") {
		t.Fatal("team-a's compaction did not read its own workspace")
	}
}
