package ingress

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the controller's Prometheus metrics (served on /metrics),
// named after ingress-nginx's where they mean the same.
type Metrics struct {
	Registry *prometheus.Registry
	// Requests counts requests by ingress (namespace/name, "" when no
	// rule matched), service (namespace/name:port) and status code.
	Requests *prometheus.CounterVec
	// Duration is each request's time from its arrival to the end of the
	// answer, by ingress.
	Duration *prometheus.HistogramVec
	// UpstreamRetries counts requests sent to another endpoint because the
	// first refused the connection.
	UpstreamRetries prometheus.Counter
	// Ingresses is the number of Ingresses served.
	Ingresses prometheus.Gauge
}

// NewMetrics registers the metrics in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kobune_ingress_requests_total",
			Help: "Requests served, by Ingress, backend Service port and HTTP status."}, []string{"ingress", "service", "status"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kobune_ingress_request_duration_seconds",
			Help: "Time from a request's arrival to the end of its answer.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"ingress"}),
		UpstreamRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "kobune_ingress_upstream_retries_total",
			Help: "Requests sent to another endpoint after the first refused the connection."}),
		Ingresses: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kobune_ingress_ingresses", Help: "Ingresses served."}),
	}
	m.Registry.MustRegister(m.Requests, m.Duration, m.UpstreamRetries, m.Ingresses,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
