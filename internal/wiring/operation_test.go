package wiring

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
)

// TestOperationCompacts: without plugins or a provider, an operation
// compacts with the built-in summarizer and Close releases the session.
func TestOperationCompacts(t *testing.T) {
	path := copyDemo(t)
	cfg := loadConfig(t, map[string]any{"compaction": map[string]any{"keepRecentTokens": 8000}})
	released := 0
	op, err := StartOperation(t.Context(), OperationOptions{
		Config: cfg, Fires: engine.CompactEvents, Logger: hclog.NewNullLogger(),
		Open: func() (session.Backend, func(), error) {
			b, release, err := openFile(path)()
			return b, func() { released++; release() }, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if op.SummarizerName != "builtin" {
		t.Errorf("summarizer %q", op.SummarizerName)
	}
	res, err := op.Engine.Compact(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	op.Close()
	if released != 1 {
		t.Errorf("released %d times", released)
	}
	if got := lastCompaction(t, path).Get("id").String(); got != res.Entry.ID {
		t.Errorf("last compaction %s, want %s", got, res.Entry.ID)
	}
}

// TestOperationOpenRefused: a session opened and then refused by Open
// (a file to migrate) is released all the same, and the error is Open's.
func TestOperationOpenRefused(t *testing.T) {
	refused := errors.New("migrate it first")
	released := 0
	_, err := StartOperation(t.Context(), OperationOptions{
		Config: loadConfig(t, map[string]any{}), Fires: engine.CompactEvents, Logger: hclog.NewNullLogger(),
		Open: func() (session.Backend, func(), error) { return nil, func() { released++ }, refused },
	})
	if !errors.Is(err, refused) || released != 1 {
		t.Fatalf("err %v, released %d", err, released)
	}
}

// TestOperationClosedPluginMissing: a plugin with failure: closed that
// does not start (an executable that exits at once) stops the operation before anything is written; one that
// fails open is left out with a warning.
func TestOperationClosedPluginMissing(t *testing.T) {
	for _, failure := range []string{"closed", "open"} {
		t.Run(failure, func(t *testing.T) {
			path := copyDemo(t)
			bin := filepath.Join(t.TempDir(), "not-a-plugin.sh")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := loadConfig(t, map[string]any{"plugins": []map[string]any{
				{"name": "gone", "path": bin, "failure": failure},
			}})
			op, err := StartOperation(t.Context(), OperationOptions{
				Config: cfg, Fires: engine.CompactEvents, Open: openFile(path), Logger: hclog.NewNullLogger(),
			})
			if failure == "closed" {
				if err == nil || !strings.Contains(err.Error(), `plugin "gone" has failure: closed and did not start`) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			op.Close()
		})
	}
}

// TestCompactFallsBackToBuiltin: when the configured model keeps failing,
// the built-in summarizer, the chain's last fallback, still compacts the
// session.
func TestCompactFallsBackToBuiltin(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-wrong")
	path := copyDemo(t)
	op, err := StartOperation(t.Context(), OperationOptions{
		Config:   loadConfig(t, map[string]any{"compaction": map[string]any{"keepRecentTokens": 8000}}),
		Provider: Provider{Name: "openai", BaseURL: srv.URL + "/v1", Model: "m"},
		Fires:    engine.CompactEvents, Open: openFile(path), Logger: hclog.NewNullLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	res, err := op.Engine.Compact(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Summary, "## Goal") {
		t.Fatalf("no built-in summary: %s", res.Summary)
	}
}
