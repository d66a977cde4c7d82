package server

import (
	"fmt"
	"io"
	"slices"
	"strings"

	vm "github.com/VictoriaMetrics/metrics"
)

// family is one metric family of /metrics: its HELP and TYPE lines, then
// its series, each named by its labels. The metrics package writes a set's
// series without the help texts Pith gives, so each family has a set of
// its own and writes its own two header lines first.
type family struct {
	name, kind, help string
	set              *vm.Set
}

func newFamily(name, kind, help string) *family {
	return &family{name: name, kind: kind, help: help, set: vm.NewSet()}
}

func sortFamilies(fs []*family) {
	slices.SortFunc(fs, func(a, b *family) int { return strings.Compare(a.name, b.name) })
}

// write writes the family unless it has no series yet (a labelled family
// before its first observation), as the Prometheus client does.
func (f *family) write(w io.Writer) {
	if len(f.set.ListMetricNames()) == 0 {
		return
	}
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.kind)
	f.set.WritePrometheus(w)
}

func (f *family) counter(labels ...string) *vm.Counter {
	return f.set.GetOrCreateCounter(f.series(labels))
}

func (f *family) gauge(labels ...string) *vm.Gauge {
	return f.set.GetOrCreateGauge(f.series(labels), nil)
}

func (f *family) histogram(buckets []float64, labels ...string) *vm.PrometheusHistogram {
	return f.set.GetOrCreatePrometheusHistogramExt(f.series(labels), buckets)
}

// read adds a series whose value is read when /metrics is served.
func (f *family) read(value func() float64, labels ...string) {
	f.set.GetOrCreateGauge(f.series(labels), value)
}

// series is the family's name with labels (pairs of name and value),
// sorted by label name as the Prometheus client writes them, each value
// escaped as the text format requires. It runs on every observation, so
// callers pass their pairs sorted already and the name is built in one
// allocation; unsorted pairs are sorted on a copy.
func (f *family) series(labels []string) string {
	if len(labels) == 0 {
		return f.name
	}
	if !pairsSorted(labels) {
		labels = sortedPairs(labels)
	}
	n := len(f.name) + 2
	for _, l := range labels {
		n += len(l) + 3
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(f.name)
	b.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		writeLabelValue(&b, labels[i+1])
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func pairsSorted(labels []string) bool {
	for i := 2; i+1 < len(labels); i += 2 {
		if labels[i] < labels[i-2] {
			return false
		}
	}
	return true
}

func sortedPairs(labels []string) []string {
	type pair struct{ k, v string }
	pairs := make([]pair, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, pair{labels[i], labels[i+1]})
	}
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	out := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		out = append(out, p.k, p.v)
	}
	return out
}

// writeLabelValue writes v escaped as the text format requires: a
// backslash, a double quote and a newline.
func writeLabelValue(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// exponentialBuckets is count upper bounds from start, each factor times
// the one before.
func exponentialBuckets(start, factor float64, count int) []float64 {
	b := make([]float64, count)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}
