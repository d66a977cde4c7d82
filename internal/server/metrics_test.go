package server

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/pluginhost"
)

func TestMetrics(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "m.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := s.AppendMessages(ctx, userMsg("u", 100)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AfterTurn(ctx, assistantMsg("a", 100)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Context(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Open(ctx, "../outside.jsonl"); err == nil {
		t.Fatal("a name outside the root was opened")
	}
	h.srv.ObserveReload(config.Result{Applied: true})
	h.srv.ObserveReload(config.Result{Err: io.EOF})

	rec := httptest.NewRecorder()
	h.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`pith_compactions_total{outcome="saved",reason="manual"} 1`,
		`pith_config_reloads_total{outcome="applied"} 1`,
		`pith_config_reloads_total{outcome="rejected"} 1`,
		`pith_rpc_duration_seconds_count{method="Append"} 8`,
		`pith_rpc_duration_seconds_count{method="GetContext"} 1`,
		`pith_open_sessions 1`,
		`pith_rpc_errors_total{code="InvalidArgument",method="OpenSession"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestPluginObservationsCountRestarts(t *testing.T) {
	m := newMetrics()
	m.observePlugin(pluginhost.Observation{Plugin: "audit", Kind: pluginhost.ObservedCrash, PID: 41})
	m.observePlugin(pluginhost.Observation{Plugin: "audit", Kind: pluginhost.ObservedRestart, PID: 42})
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `pith_plugin_restarts_total{plugin="audit"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %q", want)
	}
}
