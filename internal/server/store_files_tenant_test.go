package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/store/files"
)

// TestFilesStoreTenantLinks: on a files store (sessions.store = a
// directory) a token's prefix holds as on sessions.root — a session is
// reached through real directories only. A link team-a/shared ->
// ../team-b opened team-b's sessions to team-a's token (the store's
// os.Root follows a link that stays inside its directory), and a create
// through it made files in team-b.
func TestFilesStoreTenantLinks(t *testing.T) {
	dir := t.TempDir()
	st, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{
		{Name: "team-a", SHA256: HashToken("a-token"), Prefix: "team-a/"},
		{Name: "team-b", SHA256: HashToken("b-token"), Prefix: "team-b/"},
	}
	h := startHarness(t, cfg, st, nil, func() { st.Close() })
	ctx := context.Background()
	dial := func(tok string) *client.Client {
		c, err := client.Dial(h.addr, client.WithToken(tok))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := dial("a-token"), dial("b-token")
	if _, err := b.Create(ctx, "team-b/b.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	// team-b's session that no client has open.
	two, err := files.Create(filepath.Join(dir, "team-b/two.jsonl"), "/w", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	two.Close()
	if _, err := a.Create(ctx, "team-a/one.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../team-b", filepath.Join(dir, "team-a/shared")); err != nil {
		t.Fatal(err)
	}
	if s, err := a.Open(ctx, "team-a/shared/two.jsonl"); err == nil {
		t.Fatalf("team-a opened team-b's session through a link (%s)", s.ID)
	}
	if _, err := a.Create(ctx, "team-a/shared/new.jsonl", "/w"); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("team-a created a session through a link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "team-b/new.jsonl")); err == nil {
		t.Fatal("a file was made in team-b through the link")
	}
}
