package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/pith-dev/pith/hooks"
)

// TestFamilyWritesHeadersOnceAndEscapesLabels: each family says its HELP
// and TYPE once, before its series, and a label value with a quote, a
// backslash or a newline stays one well-formed line.
func TestFamilyWritesHeadersOnceAndEscapesLabels(t *testing.T) {
	f := newFamily("pith_test_total", "counter", "Things, by name.")
	f.counter("name", "a\"b\\c\nd", "kind", "x").Inc()
	f.counter("kind", "y", "name", "plain").Add(2)
	var b bytes.Buffer
	f.write(&b)
	want := "# HELP pith_test_total Things, by name.\n" +
		"# TYPE pith_test_total counter\n" +
		`pith_test_total{kind="x",name="a\"b\\c\nd"} 1` + "\n" +
		`pith_test_total{kind="y",name="plain"} 2` + "\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	empty := newFamily("pith_none_total", "counter", "Nothing yet.")
	b.Reset()
	empty.write(&b)
	if b.Len() != 0 {
		t.Errorf("a family without series wrote %q", b.String())
	}
}

// BenchmarkObserve is what every daemon call and plugin call adds for
// /metrics: the series looked up by its labels and updated.
func BenchmarkObserve(b *testing.B) {
	m := newMetrics()
	o := hooks.Observation{Plugin: "guard", Event: hooks.EventBeforeCompact, Outcome: "ok", Duration: time.Millisecond}
	start := time.Now()
	b.Run("rpc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.since("AppendMessages", start)
		}
	})
	b.Run("hook", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.observeHook(o)
		}
	})
}
