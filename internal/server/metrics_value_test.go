package server

import (
	"bufio"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// metricValue is the value /metrics shows for the series name{labels}
// (pairs of label name and value, in any order), 0 when it has none yet.
// A histogram's name_count and name_sum are read the same way.
func metricValue(t testing.TB, m *metrics, name string, labels ...string) float64 {
	t.Helper()
	want := (&family{name: name}).series(labels) + " "
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), want); ok {
			v, err := strconv.ParseFloat(line, 64)
			if err != nil {
				t.Fatalf("/metrics: %s%s: %v", want, line, err)
			}
			return v
		}
	}
	return 0
}
