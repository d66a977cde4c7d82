package main

import (
	"encoding/json"
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

// TestServeViewerNeedsFiles: the viewer reads files, so it is refused
// with a PostgreSQL store rather than showing an empty directory.
func TestServeViewerNeedsFiles(t *testing.T) {
	if m := pgtest.Missing(); m != "" {
		t.Skip("no PostgreSQL: " + m)
	}
	cfg := writeStoreConfig(t, pgtest.NewDatabase(t), map[string]any{"server": map[string]any{"viewer": "127.0.0.1:0"}})
	_, stderr, code := runCLI(t, "serve", "--config", cfg, "--listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "server.viewer") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
