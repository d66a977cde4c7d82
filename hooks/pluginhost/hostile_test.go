package pluginhost_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks/pluginhost"
)

// TestHostAPIRefusesDeepJSON: a real plugin subprocess asks the host's
// EstimateTokens about a message nested 30 million levels deep. The host
// answers InvalidArgument naming the limit, and then still answers the
// plugin's next call.
func TestHostAPIRefusesDeepJSON(t *testing.T) {
	log, _ := bufLogger()
	_, d := startAll(t, pluginhost.Options{Logger: log, Host: &engine.HostAPI{}}, nil, spec("deep", 1, "-before-compact", "host-deep"))
	out, err := d.BeforeCompact(context.Background(), preparedEvent(), limits)
	if err != nil {
		t.Fatal(err)
	}
	if out.Compaction == nil {
		t.Fatal("no compaction from the plugin")
	}
	s := out.Compaction.Summary
	if !strings.Contains(s, "code = InvalidArgument") || !strings.Contains(s, "nested deeper than 10000 levels") {
		t.Errorf("deep call: %q, want InvalidArgument naming the limit", s)
	}
	if !strings.Contains(s, "then: [2] <nil>") {
		t.Errorf("the host did not answer the next call: %q", s)
	}
}
