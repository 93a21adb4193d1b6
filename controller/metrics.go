package controller

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kobune/kobune/client/reconcile"
)

// Metrics are kobune-controller's Prometheus series, after
// controller-runtime's controller_runtime_reconcile_total,
// controller_runtime_reconcile_time_seconds and
// controller_runtime_reconcile_panics_total, and client-go's workqueue_depth.
type Metrics struct {
	Registry   *prometheus.Registry
	reconciles *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	panics     *prometheus.CounterVec
}

// NewMetrics returns an empty set of series; Manager.Add fills it per loop.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kobune_controller_reconcile_total",
			Help: "Reconciles by controller and result: success, requeue_after, error or panic."}, []string{"controller", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kobune_controller_reconcile_duration_seconds",
			Help: "Time per reconcile, by controller.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}, []string{"controller"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kobune_controller_reconcile_panics_total",
			Help: "Reconciles that panicked (recovered, reported as ReconcilePanic events), by controller."}, []string{"controller"}),
	}
	m.Registry.MustRegister(m.reconciles, m.duration, m.panics, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// watchQueue adds the loop's queue depth as a gauge.
func (m *Metrics) watchQueue(l *reconcile.Loop) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kobune_controller_workqueue_depth",
		Help: "Keys waiting in a controller's workqueue.", ConstLabels: prometheus.Labels{"controller": l.Name}},
		func() float64 { return float64(l.Queue.Len()) }))
}

func (m *Metrics) observe(controller, result string, d time.Duration) {
	if m == nil {
		return
	}
	m.reconciles.WithLabelValues(controller, result).Inc()
	m.duration.WithLabelValues(controller).Observe(d.Seconds())
	if result == "panic" {
		m.panics.WithLabelValues(controller).Inc()
	}
}
