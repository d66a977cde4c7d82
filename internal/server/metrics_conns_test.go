package server

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/admission"
)

// TestListenerMetrics: a bounded listener's connections and refusals
// show in /metrics, by listener.
func TestListenerMetrics(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := admission.Listen(inner, admission.Options{Caps: admission.Caps{Total: 1}})
	defer l.Close()
	h.srv.ObserveListener("viewer", l)
	// One held (it speaks, so it is not evicted), one refused.
	c1, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	s1, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if _, err := c1.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	c2, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	for l.Refused() == 0 {
		_, _ = c2.Read(make([]byte, 1)) // ends with the refusal
	}
	rec := httptest.NewRecorder()
	h.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`pith_connections{listener="viewer"} 1`, `pith_connections_refused_total{listener="viewer"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
