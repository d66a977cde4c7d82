package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// TestLinkedAppendNamesOnlyTheCallersPath: team-b appends to its hard
// link of team-a's session. The write is refused (a file with two names
// is never written through the daemon), and the error names neither
// tenant's file (the call names the session by its id; one open file
// serves both names). Before, the error quoted the file by the name it
// was first opened under, team-a's, to team-b.
func TestLinkedAppendNamesOnlyTheCallersPath(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := testConfig(root)
	cfg.Server.Tokens = []config.Token{
		{Name: "a", SHA256: HashToken("secret-a"), Prefix: "team-a/"},
		{Name: "b", SHA256: HashToken("secret-b"), Prefix: "team-b/"},
	}
	h := startServer(t, cfg)
	dial := func(tok string) *client.Client {
		c, err := client.Dial(h.addr, client.WithToken(tok))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := dial("secret-a"), dial("secret-b")
	sa, err := a.Create(ctx, "team-a/secret-project.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.AppendMessages(ctx, userMsg("shared", 20)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "team-b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "team-a", "secret-project.jsonl"), filepath.Join(root, "team-b", "y.jsonl")); err != nil {
		t.Fatal(err)
	}
	sb, err := b.Open(ctx, "team-b/y.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.AppendMessages(ctx, userMsg("from b", 20))
	t.Logf("b's append: %v", err)
	if err == nil {
		t.Fatal("an append through a second hard link was accepted")
	}
	for _, leak := range []string{"team-a", "secret-project", root} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("b's error names %q: %v", leak, err)
		}
	}
	if !strings.Contains(err.Error(), "more than one hard link") {
		t.Errorf("b's error does not say why: %v", err)
	}
	_, err = sa.AppendMessages(ctx, userMsg("from a", 20))
	t.Logf("a's append: %v", err)
	if err != nil && (strings.Contains(err.Error(), "team-b") || strings.Contains(err.Error(), "y.jsonl")) {
		t.Errorf("a's error names team-b's path: %v", err)
	}
}
