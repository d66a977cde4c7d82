package wiring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/internal/testproc"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// TestCompactRunsPluginsForTheirEvents: a compaction with one plugin per
// event (the configuration lists each one's events). When the
// session_before_compact plugin supplies the compaction, the
// session.compacting plugin is never called and session_compact's is;
// when it has no opinion, both are. No plugin process outlives the
// operation either way, nor any of their temporary files.
func TestCompactRunsPluginsForTheirEvents(t *testing.T) {
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		before         string
		wantCompacting bool
	}{
		{before: "compact", wantCompacting: false},
		{before: "none", wantCompacting: true},
	} {
		t.Run("before-compact="+tc.before, func(t *testing.T) {
			rec := filepath.Join(t.TempDir(), "record")
			cfg := loadConfig(t, map[string]any{
				"compaction": map[string]any{"keepRecentTokens": 8000},
				"plugins": []map[string]any{
					{"name": "first", "path": bin, "priority": 10, "events": []string{"session_before_compact"},
						"args": []string{"-name", "first", "-before-compact", tc.before}},
					{"name": "keeper", "path": bin, "priority": 20, "events": []string{"session.compacting"},
						"args": []string{"-name", "keeper", "-compacting", "context"}},
					{"name": "notified", "path": bin, "priority": 30, "events": []string{"session_compact"},
						"args": []string{"-name", "notified", "-compact", "record", "-record", rec}},
				},
			})
			path := copyDemo(t)
			// Every temporary file of the host and the plugins (sockets,
			// their directories) goes here, and must be gone at the end:
			// a plugin killed after Shutdown does not remove its socket.
			// (Short: a socket's path must fit in 108 bytes.)
			tmp, err := os.MkdirTemp("", "pt")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			t.Setenv("TMPDIR", tmp)
			op, err := StartOperation(t.Context(), OperationOptions{
				Config: cfg, Fires: engine.CompactEvents, Open: openFile(path), Logger: hclog.NewNullLogger(), HostVersion: "test",
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = op.Engine.Compact(t.Context(), "")
			op.Close()
			if err != nil {
				t.Fatalf("compact: %v", err)
			}
			testproc.RequireNoChildren(t)
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				var names []string
				for _, e := range left {
					names = append(names, e.Name())
				}
				t.Errorf("left in TMPDIR: %v", names)
			}
			var calls []string
			for _, s := range lastCompaction(t, path).Get("details.hookTimeline").Array() {
				calls = append(calls, s.Get("plugin").String()+" "+s.Get("event").String())
			}
			joined := strings.Join(calls, "\n")
			if !strings.Contains(joined, "first session_before_compact") {
				t.Errorf("first was not called:\n%s", joined)
			}
			if got := strings.Contains(joined, "keeper session.compacting"); got != tc.wantCompacting {
				t.Errorf("keeper called = %v, want %v:\n%s", got, tc.wantCompacting, joined)
			}
			data, err := os.ReadFile(rec)
			if err != nil || !strings.Contains(string(data), "notified session_compact") {
				t.Errorf("session_compact was not delivered: %v\n%s", err, data)
			}
		})
	}
}
