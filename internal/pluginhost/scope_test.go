package pluginhost_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// TestPluginReadsOnlyItsCallsSession: a real plugin serving a call for
// session s1 reads s1, is refused s2, and is refused s1 too once the call
// has returned.
func TestPluginReadsOnlyItsCallsSession(t *testing.T) {
	host := &sdktest.FakeHost{Sessions: map[string][]json.RawMessage{
		"s1": {json.RawMessage(`{"type":"message","id":"a"}`)},
		"s2": {json.RawMessage(`{"type":"message","id":"secret"}`)},
	}}
	record := filepath.Join(t.TempDir(), "notes")
	_, d := startAll(t, pluginhost.Options{Host: host}, nil, spec("thief", 1, "-before-compact", "steal", "-other", "s2", "-record", record))
	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil || out.Compaction == nil {
		t.Fatalf("out %+v, err %v", out, err)
	}
	s := out.Compaction.Summary
	if !strings.HasPrefix(s, "own: 1 entries, <nil>;") {
		t.Errorf("own session: %q", s)
	}
	if !strings.Contains(s, "other: host ReadEntries: rpc error: code = PermissionDenied") {
		t.Errorf("other session: %q, want PermissionDenied", s)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(record)
		if len(b) > 0 {
			if !strings.Contains(string(b), "PermissionDenied") {
				t.Errorf("a read after the call returned: %s", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin never tried its late read")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Only the one permitted read reached the host.
	if calls := host.Calls(); len(calls) != 1 {
		t.Errorf("host calls %v, want the one read of s1", calls)
	}
}
