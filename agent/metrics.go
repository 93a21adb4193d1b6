package agent

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kobune/kobune/agent/runtime"
	"github.com/kobune/kobune/api/core"
)

// Metrics are the agent's Prometheus series, named after the kubelet's
// kubelet_pod_start_duration_seconds, kubelet_running_pods and
// kubelet_runtime_operations_duration_seconds.
type Metrics struct {
	Registry     *prometheus.Registry
	PodStart     prometheus.Histogram
	RunningPods  prometheus.Gauge
	RuntimeCalls *prometheus.HistogramVec
	NetworkCalls *prometheus.HistogramVec
	// ContainerPhases splits a container's start: create, start.
	ContainerPhases *prometheus.HistogramVec
	startObserved   map[string]bool // pod uids whose start was measured
}

// NewMetrics creates the agent's metrics in their own registry.
func NewMetrics() *Metrics {
	buckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		PodStart: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kobune_agent_pod_start_duration_seconds",
			Help: "Time from a pod's creation to the agent first reporting it Running.", Buckets: buckets}),
		RunningPods: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kobune_agent_running_pods", Help: "Pods the agent runs."}),
		RuntimeCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kobune_agent_runtime_operations_duration_seconds",
			Help: "Container runtime call latency by operation.", Buckets: buckets}, []string{"operation"}),
		NetworkCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kobune_agent_cni_operations_duration_seconds",
			Help: "CNI call latency by operation (add, del).", Buckets: buckets}, []string{"operation"}),
		ContainerPhases: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kobune_agent_container_operations_duration_seconds",
			Help: "Container start by phase: create (metadata, snapshot, spec), start (task create and start).", Buckets: buckets}, []string{"operation"}),
		startObserved: map[string]bool{},
	}
	m.Registry.MustRegister(m.PodStart, m.RunningPods, m.RuntimeCalls, m.NetworkCalls, m.ContainerPhases,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// observeRunning records a pod's start duration the first time it is seen Running.
func (m *Metrics) observeRunning(pod *core.Pod, status core.PodStatus) {
	if status.Phase != core.PodRunning || m.startObserved[pod.UID] || pod.Status.Phase == core.PodRunning {
		return
	}
	m.startObserved[pod.UID] = true
	m.PodStart.Observe(time.Since(pod.CreationTimestamp.Time).Seconds())
}

// timedRuntime measures every runtime call.
type timedRuntime struct {
	runtime.Runtime
	calls *prometheus.HistogramVec
}

func (t timedRuntime) observe(op string, start time.Time) {
	t.calls.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (t timedRuntime) RunPod(ctx context.Context, pod *core.Pod, restart []string) (runtime.PodState, error) {
	defer t.observe("run_pod", time.Now())
	return t.Runtime.RunPod(ctx, pod, restart)
}

func (t timedRuntime) StopPod(ctx context.Context, uid string, grace time.Duration) error {
	defer t.observe("stop_pod", time.Now())
	return t.Runtime.StopPod(ctx, uid, grace)
}

func (t timedRuntime) KillContainer(ctx context.Context, uid, name string, grace time.Duration) error {
	defer t.observe("kill_container", time.Now())
	return t.Runtime.KillContainer(ctx, uid, name, grace)
}

func (t timedRuntime) Pods(ctx context.Context) ([]runtime.PodState, error) {
	defer t.observe("list_pods", time.Now())
	return t.Runtime.Pods(ctx)
}
