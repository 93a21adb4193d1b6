package apiserver

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/proto/apipb"
)

// metrics are the API server's Prometheus series, named after
// kube-apiserver's apiserver_request_total and
// apiserver_request_duration_seconds.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	watchers *prometheus.GaugeVec
	// etcd's database: size, live data, quota and the NOSPACE alarm.
	dbSize, dbInUse, dbQuota, noSpace prometheus.Gauge
}

// storage records etcd's database state (apiserver/etcd/space.go).
func (m *metrics) storage(alarmed bool, size, inUse, quota int64) {
	m.dbSize.Set(float64(size))
	m.dbInUse.Set(float64(inUse))
	m.dbQuota.Set(float64(quota))
	if alarmed {
		m.noSpace.Set(1)
	} else {
		m.noSpace.Set(0)
	}
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kobune_apiserver_requests_total",
			Help: "API requests by verb, resource and gRPC code.",
		}, []string{"verb", "resource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kobune_apiserver_request_duration_seconds",
			Help:    "API request latency by verb and resource (watches: until the stream ends).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60},
		}, []string{"verb", "resource"}),
		watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kobune_apiserver_registered_watchers",
			Help: "Open watches by resource.",
		}, []string{"resource"}),
		dbSize: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kobune_apiserver_storage_db_size_bytes",
			Help: "Size of etcd's database file (apiserver_storage_db_total_size_in_bytes in Kubernetes)."}),
		dbInUse: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kobune_apiserver_storage_db_size_in_use_bytes",
			Help: "Bytes of etcd's database file that hold live data; the rest is freed by defragmentation."}),
		dbQuota: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kobune_apiserver_storage_db_quota_bytes",
			Help: "etcd's backend quota: at this size etcd raises its NOSPACE alarm."}),
		noSpace: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kobune_apiserver_storage_nospace_alarm",
			Help: "1 while etcd's NOSPACE alarm is raised (every write fails), else 0."}),
	}
	m.registry.MustRegister(m.requests, m.latency, m.watchers, m.dbSize, m.dbInUse, m.dbQuota, m.noSpace,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

type resourceRequest interface{ GetResource() string }

// filter is the handler chain's first step: it counts every call by verb,
// resource and code, times it (a stream until it ends), and keeps the
// number of open watches.
func (m *metrics) filter(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
	start := time.Now()
	verb, resource := strings.ToLower(c.Method), resourceOf(c.Request)
	if c.Method == "Watch" {
		m.watchers.WithLabelValues(resource).Inc()
		defer m.watchers.WithLabelValues(resource).Dec()
	}
	resp, err := next(ctx, c)
	m.observe(verb, resource, start, err)
	return resp, err
}

// resourceOf is the resource a call is about, for the series' labels:
// the pods subresources count under pods, the node proxy under nodes.
func resourceOf(req any) string {
	switch r := req.(type) {
	case resourceRequest:
		return r.GetResource()
	case *apipb.BindRequest, *apipb.PodLogsRequest, *apipb.PodAttachRequest, *apipb.PodExecInput, *apipb.PodPortForwardData:
		return "pods"
	case *apipb.NodeStatsRequest, *apipb.ServicePathRequest:
		return "nodes"
	}
	return ""
}

func (m *metrics) observe(verb, resource string, start time.Time, err error) {
	m.requests.WithLabelValues(verb, resource, status.Code(err).String()).Inc()
	m.latency.WithLabelValues(verb, resource).Observe(time.Since(start).Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
