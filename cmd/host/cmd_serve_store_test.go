package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/pgtest"
)

func writeStoreConfig(t *testing.T, store string, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{"sessions": map[string]any{"root": "sessions", "store": store}}
	for k, v := range extra {
		cfg[k] = v
	}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "pith.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeUnreachableStore: a database that does not answer stops the
// start with one line naming sessions.store, without its password.
func TestServeUnreachableStore(t *testing.T) {
	cfg := writeStoreConfig(t, "postgres://pith:hunter2@127.0.0.1:1/pith?connect_timeout=2", nil)
	_, stderr, code := runCLI(t, "serve", "--config", cfg, "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "sessions.store") || !strings.Contains(stderr, "unavailable") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "hunter2") {
		t.Fatalf("the password is shown: %s", stderr)
	}
}

// TestServeViewerOnStore: with sessions in PostgreSQL, `pith serve
// --viewer` serves the stored sessions: the index lists one imported into
// the database, and its page's API answers.
func TestServeViewerOnStore(t *testing.T) {
	if m := pgtest.Missing(); m != "" {
		t.Skip("no PostgreSQL: " + m)
	}
	url := pgtest.NewDatabase(t)
	mustCLI(t, "import", "--store", url, filepath.Join("..", "..", "examples", "demo-session.jsonl"), "team/demo.jsonl")
	p := startServe(t, writeStoreConfig(t, url, nil), "--viewer", "127.0.0.1:0")
	p.waitLog(t, "viewer: url=")
	var base string
	for _, line := range strings.Split(p.log(), "\n") {
		if _, after, ok := strings.Cut(line, "viewer: url="); ok {
			base = strings.TrimSpace(after)
		}
	}
	for _, c := range []struct{ path, want string }{
		{"", "team/demo.jsonl"},
		{"s/team/demo.jsonl/api/session", `"path":"team/demo.jsonl"`},
	} {
		resp, err := http.Get(base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), c.want) {
			t.Fatalf("GET %s%s: %d\n%.500s", base, c.path, resp.StatusCode, body)
		}
	}
}
