package server

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/config"
)

// TestDaemonPanelKeepsReloadErrorsToTheLog: every signed-in viewer user
// sees the daemon panel; a rejected reload's reason quotes the
// configuration (token prefixes of other tenants, paths), so the panel says
// only that it was rejected.
func TestDaemonPanelKeepsReloadErrorsToTheLog(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	h.srv.recordReload(config.Result{Err: errors.New(`server.tokens[2]: prefix "team-b/secret-project/" overlaps`)})
	b, err := json.Marshal((&Viewer{s: h.srv}).daemonPanel(nil, "team-a/one.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "team-b") || !strings.Contains(string(b), `"outcome":"rejected"`) {
		t.Fatalf("daemon panel: %s", b)
	}
}
