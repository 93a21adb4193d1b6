package scheduler

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the scheduler's Prometheus series, after kube-scheduler's
// scheduler_schedule_attempts_total, scheduler_e2e_scheduling_duration_seconds
// and scheduler_pending_pods.
type Metrics struct {
	Registry *prometheus.Registry
	Attempts *prometheus.CounterVec // result: scheduled, unschedulable, error
	Latency  prometheus.Histogram   // pod creation to bind
	Pending  prometheus.GaugeFunc
}

func newMetrics(pending func() float64) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kobune_scheduler_schedule_attempts_total",
			Help: "Scheduling attempts by result: scheduled, unschedulable or error."}, []string{"result"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kobune_scheduler_e2e_scheduling_duration_seconds",
			Help: "From a pod's creation to its bind.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		Pending: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kobune_scheduler_pending_pods",
			Help: "Pods waiting in the scheduling queue."}, pending),
	}
	m.Registry.MustRegister(m.Attempts, m.Latency, m.Pending, collectors.NewGoCollector())
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
