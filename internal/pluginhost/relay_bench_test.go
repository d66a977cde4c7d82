package pluginhost

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// BenchmarkStderrFlood: the host's cost per byte of a plugin flooding its
// stderr once over its limits: lines are counted and dropped unparsed.
func BenchmarkStderrFlood(b *testing.B) {
	w := newLimitedLogWriter(hclog.NewNullLogger(), 16<<10, newRelayLimit(200, 256<<10), &lastWords{})
	line := []byte(strings.Repeat("flood ", 170) + "\n")
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = w.Write(line)
	}
}

// BenchmarkRelayTextLine: the host's cost of relaying one plain 1 KiB
// stderr line within the limits (sanitize: escaped for the terminal).
func BenchmarkRelayTextLine(b *testing.B) {
	w := newLogWriter(hclog.NewNullLogger())
	line := []byte(strings.Repeat("a plain log line of plugin output, ", 29) + "\n")
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = w.Write(line)
	}
}
