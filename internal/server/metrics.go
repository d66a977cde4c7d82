package server

import (
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/status"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the daemon's Prometheus series, on a registry of their own
// (no global state).
type metrics struct {
	reg            *prometheus.Registry
	compactions    *prometheus.CounterVec
	hookLatency    *prometheus.HistogramVec
	hookCalls      *prometheus.CounterVec
	pluginRestarts *prometheus.CounterVec
	reloads        *prometheus.CounterVec
	rpcLatency     *prometheus.HistogramVec
	rpcErrors      *prometheus.CounterVec
	openSessions   prometheus.Gauge
	authFailures   prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		compactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pith_compactions_total",
			Help: "Compactions by reason (manual, threshold, overflow) and outcome (saved, failed, aborted, cancelled).",
		}, []string{"reason", "outcome"}),
		hookLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pith_hook_duration_seconds",
			Help:    "Plugin hook call latency by plugin and event.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"plugin", "event"}),
		hookCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pith_hook_calls_total",
			Help: "Plugin hook calls by plugin, event and outcome.",
		}, []string{"plugin", "event", "outcome"}),
		pluginRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pith_plugin_restarts_total",
			Help: "Plugin processes restarted after a crash, by plugin.",
		}, []string{"plugin"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pith_config_reloads_total",
			Help: "Configuration reload attempts by outcome (applied, rejected, unchanged).",
		}, []string{"outcome"}),
		rpcLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pith_rpc_duration_seconds",
			Help:    "SessionService call latency by method (streams: until the result).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 11),
		}, []string{"method"}),
		rpcErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pith_rpc_errors_total",
			Help: "SessionService calls that failed, by method and gRPC code (Aborted: lost a race with another host; Unavailable: the shared store is down).",
		}, []string{"method", "code"}),
		openSessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pith_open_sessions",
			Help: "Sessions open in the daemon.",
		}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pith_auth_failures_total",
			Help: "Calls (gRPC and /metrics) refused for missing, unknown or revoked credentials.",
		}),
	}
	m.reg.MustRegister(m.compactions, m.hookLatency, m.hookCalls, m.pluginRestarts, m.reloads, m.rpcLatency, m.rpcErrors, m.openSessions, m.authFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func (m *metrics) observeHook(o hooks.Observation) {
	m.hookLatency.WithLabelValues(o.Plugin, string(o.Event)).Observe(o.Duration.Seconds())
	m.hookCalls.WithLabelValues(o.Plugin, string(o.Event), string(o.Outcome)).Inc()
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
	m.compactions.WithLabelValues(string(ev.Reason), outcome).Inc()
}

func (m *metrics) observeReload(r config.Result) {
	outcome := "unchanged"
	switch {
	case r.Applied:
		outcome = "applied"
	case r.Err != nil:
		outcome = "rejected"
	}
	m.reloads.WithLabelValues(outcome).Inc()
}

func (m *metrics) since(method string, start time.Time) {
	m.rpcLatency.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// observeError counts a failed call by its method's short name and code.
func (m *metrics) observeError(fullMethod string, err error) {
	if err == nil {
		return
	}
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	m.rpcErrors.WithLabelValues(method, status.Code(err).String()).Inc()
}

// observePlugin counts plugin restarts, told by the supervisors through
// pluginhost.Options.Observe.
func (m *metrics) observePlugin(o pluginhost.Observation) {
	if o.Kind == pluginhost.ObservedRestart {
		m.pluginRestarts.WithLabelValues(o.Plugin).Inc()
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
	labels := prometheus.Labels{"listener": name}
	s.metrics.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pith_connections", Help: "Connections a listener holds (server.maxConnections bounds them).", ConstLabels: labels,
		}, func() float64 { n, _ := l.Held(""); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pith_connections_refused_total", Help: "Connections a listener closed at once, past server.maxConnections or server.maxConnectionsPerAddress.", ConstLabels: labels,
		}, func() float64 { return float64(l.Refused()) }),
	)
}
