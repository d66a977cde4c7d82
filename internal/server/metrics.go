package server

import (
	"net/http"
	"strings"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
	"google.golang.org/grpc/status"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
)

// metrics are the daemon's Prometheus series, kept in sets of their own
// (no global state), one family at a time (metricfamily.go).
//
// They are VictoriaMetrics' small metrics package rather than the
// Prometheus client: the client's package initialisation (its default
// registry with Go and process collectors, procfs) cost about a
// millisecond of CPU at the start of every pith command, and pith serve
// is one command of many in the same binary.
type metrics struct {
	families       []*family
	compactions    *family
	hookLatency    *family
	hookCalls      *family
	pluginRestarts *family
	reloads        *family
	rpcLatency     *family
	rpcErrors      *family
	connections    *family
	connsRefused   *family
	openSessions   *vm.Gauge
	authFailures   *vm.Counter
}

// The histograms' upper bounds: 100 µs × 4ⁿ (to ~26 s) for plugin
// calls, 50 µs × 4ⁿ (to ~52 s) for daemon calls.
var (
	hookBuckets = exponentialBuckets(0.0001, 4, 10)
	rpcBuckets  = exponentialBuckets(0.00005, 4, 11)
)

func newMetrics() *metrics {
	m := &metrics{}
	add := func(name, kind, help string) *family {
		f := newFamily(name, kind, help)
		m.families = append(m.families, f)
		return f
	}
	m.compactions = add("pith_compactions_total", "counter",
		"Compactions by reason (manual, threshold, overflow) and outcome (saved, failed, aborted, cancelled).")
	m.hookLatency = add("pith_hook_duration_seconds", "histogram",
		"Plugin hook call latency by plugin and event.")
	m.hookCalls = add("pith_hook_calls_total", "counter",
		"Plugin hook calls by plugin, event and outcome.")
	m.pluginRestarts = add("pith_plugin_restarts_total", "counter",
		"Plugin processes restarted after a crash, by plugin.")
	m.reloads = add("pith_config_reloads_total", "counter",
		"Configuration reload attempts by outcome (applied, rejected, unchanged).")
	m.rpcLatency = add("pith_rpc_duration_seconds", "histogram",
		"SessionService call latency by method (streams: until the result).")
	m.rpcErrors = add("pith_rpc_errors_total", "counter",
		"SessionService calls that failed, by method and gRPC code (Aborted: lost a race with another host; Unavailable: the shared store is down).")
	m.connections = add("pith_connections", "gauge",
		"Connections a listener holds (server.maxConnections bounds them).")
	m.connsRefused = add("pith_connections_refused_total", "counter",
		"Connections a listener closed at once, past server.maxConnections or server.maxConnectionsPerAddress.")
	m.openSessions = add("pith_open_sessions", "gauge", "Sessions open in the daemon.").gauge()
	m.authFailures = add("pith_auth_failures_total", "counter",
		"Calls (gRPC and /metrics) refused for missing, unknown or revoked credentials.").counter()
	sortFamilies(m.families)
	return m
}

// handler serves the families in the Prometheus text format, then the Go
// runtime's and the process's own series (go_*, process_*).
func (m *metrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		for _, f := range m.families {
			f.write(w)
		}
		vm.WriteProcessMetrics(w)
	})
}

func (m *metrics) observeHook(o hooks.Observation) {
	m.hookLatency.histogram(hookBuckets, "event", string(o.Event), "plugin", o.Plugin).Update(o.Duration.Seconds())
	m.hookCalls.counter("event", string(o.Event), "outcome", string(o.Outcome), "plugin", o.Plugin).Inc()
}

func (m *metrics) observeEvent(ev engine.Event) {
	if ev.Kind != engine.EventCompactionEnd {
		return
	}
	outcome := "saved"
	switch {
	case ev.Aborted:
		outcome = "aborted"
	case ev.Cancelled:
		outcome = "cancelled"
	case ev.Error != "":
		outcome = "failed"
	}
	m.compactions.counter("outcome", outcome, "reason", string(ev.Reason)).Inc()
}

func (m *metrics) observeReload(r config.Result) {
	outcome := "unchanged"
	switch {
	case r.Applied:
		outcome = "applied"
	case r.Err != nil:
		outcome = "rejected"
	}
	m.reloads.counter("outcome", outcome).Inc()
}

func (m *metrics) since(method string, start time.Time) {
	m.rpcLatency.histogram(rpcBuckets, "method", method).Update(time.Since(start).Seconds())
}

// observeError counts a failed call by its method's short name and code.
func (m *metrics) observeError(fullMethod string, err error) {
	if err == nil {
		return
	}
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	m.rpcErrors.counter("code", status.Code(err).String(), "method", method).Inc()
}

// observePlugin counts plugin restarts, told by the supervisors through
// pluginhost.Options.Observe.
func (m *metrics) observePlugin(o pluginhost.Observation) {
	if o.Kind == pluginhost.ObservedRestart {
		m.pluginRestarts.counter("plugin", o.Plugin).Inc()
	}
}

// ListenerStats is what a bounded listener tells of itself: the
// connections it holds, and those it closed at its caps.
type ListenerStats interface {
	Held(key string) (total, forKey int)
	Refused() int64
}

// ObserveListener exports l's connections as pith_connections{listener}
// and its refusals as pith_connections_refused_total{listener}: a flood
// shows there, not only in one log line per 10 s.
func (s *Server) ObserveListener(name string, l ListenerStats) {
	s.metrics.connections.read(func() float64 { n, _ := l.Held(""); return float64(n) }, "listener", name)
	s.metrics.connsRefused.read(func() float64 { return float64(l.Refused()) }, "listener", name)
}
