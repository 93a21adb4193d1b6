package scheduler

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the scheduler's Prometheus series, after kube-scheduler's
// scheduler_schedule_attempts_total, scheduler_e2e_scheduling_duration_seconds,
// scheduler_scheduling_algorithm_duration_seconds and scheduler_pending_pods
// (by queue: active, backoff, unschedulable).
type Metrics struct {
	Registry      *prometheus.Registry
	Attempts      *prometheus.CounterVec // result: scheduled, unschedulable, error
	Latency       prometheus.Histogram   // pod creation to bind
	Algorithm     prometheus.Histogram   // filtering and scoring of one attempt
	Preemptions   prometheus.Counter     // victims deleted
	DroppedEvents prometheus.CounterFunc
}

func newMetrics(lens func() (active, backoff, unschedulable int), dropped func() float64) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kobune_scheduler_schedule_attempts_total",
			Help: "Scheduling attempts by result: scheduled, unschedulable or error."}, []string{"result"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kobune_scheduler_e2e_scheduling_duration_seconds",
			Help: "From a pod's creation to its bind.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		Algorithm: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kobune_scheduler_scheduling_algorithm_duration_seconds",
			Help: "Filtering and scoring for one attempt.", Buckets: prometheus.ExponentialBuckets(0.00001, 2, 18)}),
		Preemptions: prometheus.NewCounter(prometheus.CounterOpts{Name: "kobune_scheduler_preemption_victims_total",
			Help: "Pods deleted to make room for higher-priority pods."}),
		DroppedEvents: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kobune_scheduler_events_dropped_total",
			Help: "Events not written because the event queue was full."}, dropped),
	}
	m.Registry.MustRegister(m.Attempts, m.Latency, m.Algorithm, m.Preemptions, m.DroppedEvents, collectors.NewGoCollector())
	for i, queue := range []string{"active", "backoff", "unschedulable"} {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kobune_scheduler_pending_pods",
			Help: "Pods waiting in the scheduling queue, by part.", ConstLabels: prometheus.Labels{"queue": queue}}, func() float64 {
			a, b, u := lens()
			return float64([]int{a, b, u}[i])
		}))
	}
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
