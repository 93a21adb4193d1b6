package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler"
	"github.com/kobune/kobune/test/benchreport"
)

// post sends an empty POST from inside the node's network namespace.
func (n *node) post(ctx context.Context, url string) error {
	out, err := n.exec(ctx, "timeout", "5", "busybox", "wget", "-q", "-O", "-", "--post-data=", url)
	if err != nil {
		return fmt.Errorf("POST %s: %v: %s", url, err, out)
	}
	return nil
}

func sortedDurations(d []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), d...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestBenchMetricFreshness is `make bench`'s metric freshness benchmark
// (root, KOBUNE_BENCH_REPORT): a labapp pod limited to 200m idles; 10
// times it is told to burn CPU for 4 s, and the time from that request
// to the metrics API showing it above 100m is measured (the API polled
// every 100 ms); then it idles until the API shows it below 20m again.
func TestBenchMetricFreshness(t *testing.T) {
	report := benchreport.Path(t)
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.89.0/24")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "step", Namespace: "default", Labels: map[string]string{"app": "step"}}, Spec: core.PodSpec{NodeName: "node-1",
		Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
			Resources: core.ResourceRequirements{Limits: resource.List{resource.CPU: resource.MustParse("200m")}}}}}}); err != nil {
		t.Fatal(err)
	}
	p := waitForPod(t, ctx, pods, "step", 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning && p.Status.PodIP != "" })
	cpu := func() int64 {
		l, err := srv.Client.PodMetrics(ctx, "default", "app=step")
		if err != nil || len(l.Items) != 1 {
			return -1
		}
		q := l.Items[0].Containers[0].Usage[resource.CPU]
		return q.MilliValue()
	}
	until := func(cond func(int64) bool, limit time.Duration) (time.Duration, bool) {
		start := time.Now()
		for time.Since(start) < limit {
			if v := cpu(); v >= 0 && cond(v) {
				return time.Since(start), true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return limit, false
	}
	if _, ok := until(func(v int64) bool { return v < 20 }, time.Minute); !ok {
		t.Fatal("the idle pod never showed under 20m")
	}
	var lat []time.Duration
	for range 10 {
		start := time.Now()
		if err := nodes[0].post(ctx, "http://"+p.Status.PodIP+":8080/burn?seconds=4"); err != nil {
			t.Fatal(err)
		}
		if _, ok := until(func(v int64) bool { return v > 100 }, 20*time.Second); !ok {
			t.Fatal("the burning pod never showed above 100m")
		}
		lat = append(lat, time.Since(start))
		if _, ok := until(func(v int64) bool { return v < 20 }, time.Minute); !ok {
			t.Fatal("the pod never idled again")
		}
	}
	s := sortedDurations(lat)
	benchreport.Append(t, report, fmt.Sprintf(`
## Metric freshness (test/e2e TestBenchMetricFreshness)

Measured %s. One real node; a labapp pod limited to 200m idles, then is told to burn CPU (POST /burn from the node); the time from the request to the metrics API (metrics.k8s.io PodMetrics, read through the API server, polled every 100 ms) showing it above 100m — half its new rate. The agent samples every second and rates CPU over the last 5 s, so a step shows once the window has seen about half of it. 10 steps, the pod idle (under 20m through the API) before each.

| p50 | p99 (the slowest of 10) | fastest |
|---|---|---|
| %.1f s | %.1f s | %.1f s |

For comparison, metrics-server scrapes the kubelets every 15 s by default (--metric-resolution).
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), s[len(s)/2].Seconds(), s[len(s)-1].Seconds(), s[0].Seconds()))
}

// TestBenchAutoscalingDelay is `make bench`'s autoscaling delay benchmark
// (seed §49 and §73): a Deployment of 1 labapp pod (100m requested, 300m
// limit) under an autoscaler at 50 % CPU between 1 and 3 replicas with
// Kubernetes' default sync period (15 s); a load pod starts calling the
// Service's /burn without pause, and each stage is timed from that load
// step until the 3rd replica is Ready: the metric above target through
// the metrics API, the autoscaler's decision (the Deployment's replicas
// raised), the new pods created, scheduled, running and ready. 3 rounds,
// reset to 1 replica between them.
func TestBenchAutoscalingDelay(t *testing.T) {
	report := benchreport.Path(t)
	requireRoot(t)
	srv, _, ctx := startWithControllers(t, 10*time.Minute, "10.244.90.0/24")
	go scheduler.New(scheduler.Config{Logf: func(string, ...any) {}}, componentClient(t, srv, "scheduler")).Run(ctx)
	c := srv.Client
	one := int32(1)
	labels := map[string]string{"app": "web"}
	deployments := client.For[*apps.Deployment](c)
	if _, err := deployments.Create(ctx, &apps.Deployment{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: apps.DeploymentSpec{Replicas: &one, Selector: &meta.LabelSelector{MatchLabels: labels},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: labels}, Spec: core.PodSpec{Containers: []core.Container{{Name: "app",
				Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever,
				ReadinessProbe: &core.Probe{ProbeHandler: core.ProbeHandler{HTTPGet: &core.HTTPGetAction{Path: "/readyz", Port: meta.FromInt(8080)}}, PeriodSeconds: 1},
				Resources:      core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse("100m")}, Limits: resource.List{resource.CPU: resource.MustParse("300m")}}}}}}}}); err != nil {
		t.Fatal(err)
	}
	svc, err := client.For[*core.Service](c).Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: labels, Ports: []core.ServicePort{{Port: 80, TargetPort: meta.FromInt(8080)}}}})
	if err != nil {
		t.Fatal(err)
	}
	pods := client.For[*core.Pod](c)
	hpas := client.For[*autoscaling.HorizontalPodAutoscaler](c)
	stages := []string{"metric above target", "autoscaler decision", "pods created", "pods scheduled", "pods running", "pods ready"}
	var rounds [][]time.Duration
	for round := range 3 {
		if _, err := client.WaitFor(ctx, deployments, "default", "web", 0, func(d *apps.Deployment, _ bool) bool {
			return d.Status.ReadyReplicas == 1 && d.Status.Replicas == 1
		}); err != nil {
			t.Fatalf("round %d: not back at 1 replica: %v", round, err)
		}
		// Idle before the step: the remaining pod's CPU (over the last 5 s)
		// back under 20m, so the new autoscaler starts from rest.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			l, err := c.PodMetrics(ctx, "default", "app=web")
			if err == nil && len(l.Items) == 1 && len(l.Items[0].Containers) == 1 {
				if q := l.Items[0].Containers[0].Usage[resource.CPU]; q.MilliValue() < 20 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the pod never idled", round)
			}
		}
		fifty := int32(50)
		if _, err := hpas.Create(ctx, &autoscaling.HorizontalPodAutoscaler{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: autoscaling.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscaling.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
				MinReplicas: &one, MaxReplicas: 3, Metrics: []autoscaling.MetricSpec{{Type: autoscaling.ResourceMetricSourceType, Resource: &autoscaling.ResourceMetricSource{Name: resource.CPU,
					Target: autoscaling.MetricTarget{Type: autoscaling.UtilizationMetricType, AverageUtilization: &fifty}}}}}}); err != nil {
			t.Fatal(err)
		}
		// The autoscaler is running (it has seen the idle pod) before the step.
		if _, err := client.WaitFor(ctx, hpas, "default", "web", 0, func(h *autoscaling.HorizontalPodAutoscaler, _ bool) bool {
			return hpaCondition(h, autoscaling.ScalingActive) == meta.ConditionTrue && h.Status.DesiredReplicas == 1
		}); err != nil {
			t.Fatal(err)
		}
		existing := map[string]bool{}
		list, listRev, err := pods.List(ctx, "default", client.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list {
			existing[p.Name] = true
		}
		// Watch what follows the step.
		var mu sync.Mutex
		at := map[string]time.Time{}
		mark := func(stage string) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := at[stage]; !ok {
				at[stage] = time.Now()
			}
		}
		perPod := map[string]map[string]bool{}
		wctx, stop := context.WithCancel(ctx)
		pw, err := pods.Watch(wctx, "default", client.ListOptions{LabelSelector: "app=web"}, listRev)
		if err != nil {
			t.Fatal(err)
		}
		dw, err := deployments.Watch(wctx, "default", client.ListOptions{}, listRev)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for ev := range dw.Events {
				if ev.Object.Spec.Replicas != nil && *ev.Object.Spec.Replicas > 1 {
					mark("autoscaler decision")
				}
			}
		}()
		go func() {
			for ev := range pw.Events {
				p := ev.Object
				if existing[p.Name] || ev.Type == "DELETED" {
					continue
				}
				mu.Lock()
				if perPod[p.Name] == nil {
					perPod[p.Name] = map[string]bool{}
				}
				seen := perPod[p.Name]
				seen["pods created"] = true
				seen["pods scheduled"] = seen["pods scheduled"] || p.Spec.NodeName != ""
				seen["pods running"] = seen["pods running"] || p.Status.Phase == core.PodRunning
				seen["pods ready"] = seen["pods ready"] || podReadyNow(p)
				// A stage is reached when both new pods have reached it.
				for _, st := range stages[2:] {
					n := 0
					for _, s := range perPod {
						if s[st] {
							n++
						}
					}
					if n >= 2 {
						if _, ok := at[st]; !ok {
							at[st] = time.Now()
						}
					}
				}
				mu.Unlock()
			}
		}()
		t0 := time.Now()
		loadCmd := "while true; do wget -q -O /dev/null --post-data= http://" + svc.Spec.ClusterIP + "/burn?seconds=1; done"
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "load", Namespace: "default"}, Spec: core.PodSpec{Containers: []core.Container{{Name: "load",
			Image: "kobune.local/busybox:1.35", ImagePullPolicy: core.PullNever, Command: []string{"sh", "-c", loadCmd},
			Resources: core.ResourceRequirements{Limits: resource.List{resource.CPU: resource.MustParse("100m")}}}}}}); err != nil {
			t.Fatal(err)
		}
		for time.Since(t0) < 3*time.Minute {
			if l, err := c.PodMetrics(ctx, "default", "app=web"); err == nil {
				for _, m := range l.Items {
					if existing[m.Name] && len(m.Containers) > 0 {
						if q := m.Containers[0].Usage[resource.CPU]; q.MilliValue() > 50 {
							mark("metric above target")
						}
					}
				}
			}
			mu.Lock()
			done := len(at) == len(stages)
			mu.Unlock()
			if done {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		stop()
		mu.Lock()
		var row []time.Duration
		for _, st := range stages {
			if _, ok := at[st]; !ok {
				t.Fatalf("round %d: stage %q never reached (%v)", round, st, at)
			}
			row = append(row, at[st].Sub(t0))
		}
		mu.Unlock()
		rounds = append(rounds, row)
		t.Logf("round %d: %v", round, row)
		// Reset: no load, no autoscaler, one replica.
		zero := int64(0)
		_ = pods.Delete(ctx, "default", "load", client.DeleteOptions{GracePeriodSeconds: &zero})
		_ = hpas.Delete(ctx, "default", "web", client.DeleteOptions{})
		if err := c.SetScale(ctx, "deployments", "default", "web", 1); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			if _, err := pods.Get(ctx, "default", "load"); client.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the load pod is still there a minute after its deletion")
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Autoscaling delay (test/e2e TestBenchAutoscalingDelay)\n\nMeasured %s. One real node, the controllers, the scheduler; a Deployment of one labapp pod (100m requested, 300m limit, readiness probe every 1 s) under a HorizontalPodAutoscaler at 50 %% CPU, 1 to 3 replicas, Kubernetes' default 15 s sync period; a pod starts calling the Service's `/burn` without pause (the load step, time 0), and each stage is timed until both new replicas have reached it. Where the time goes (seed §49, §73): the metrics window, then waiting for the autoscaler's next evaluation, then the ordinary path of a new pod.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "| stage (from the load step) | round 1 | round 2 | round 3 |\n|---|---|---|---|\n")
	for i, st := range stages {
		fmt.Fprintf(&b, "| %s |", st)
		for _, r := range rounds {
			fmt.Fprintf(&b, " %.1f s |", r[i].Seconds())
		}
		b.WriteString("\n")
	}
	b.WriteString("\nThe decision waits for the autoscaler's next sync after the metric crossed (up to 15 s); its first step is limited by the default scale-up policy (100 % or 4 pods per 15 s: here straight to the maximum of 3).\n")
	benchreport.Append(t, report, b.String())
}

func podReadyNow(p *core.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodReady {
			return c.Status == meta.ConditionTrue
		}
	}
	return false
}

// TestBenchEvictionReaction is `make bench`'s eviction reaction benchmark:
// a node of 1 GiB evicting below 874Mi available runs a BestEffort labapp
// pod; 10 times the pod is told to allocate 250 MiB (crossing the
// threshold when the request returns), and the time until the pod is seen
// Failed with reason Evicted (stopped, its status written) is measured.
func TestBenchEvictionReaction(t *testing.T) {
	report := benchreport.Path(t)
	requireRoot(t)
	srv, nodes := startCluster(t, 1)
	nodes[0].startAgent(t, "10.244.91.0/24", "--capacity", "cpu=2,memory=1Gi,pods=110", "--eviction-hard", "memory.available<874Mi",
		"--eviction-pressure-transition-period", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	pods := client.For[*core.Pod](srv.Client)
	var lat []time.Duration
	for i := range 10 {
		name := fmt.Sprintf("victim-%d", i)
		if _, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{NodeName: "node-1", RestartPolicy: core.RestartPolicyNever,
			Containers: []core.Container{{Name: "app", Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever}}}}); err != nil {
			t.Fatal(err)
		}
		p := waitForPod(t, ctx, pods, name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning && p.Status.PodIP != "" })
		time.Sleep(2 * time.Second) // sampled idle first
		if err := nodes[0].post(ctx, "http://"+p.Status.PodIP+":8080/alloc?mb=250"); err != nil {
			t.Fatal(err)
		}
		crossed := time.Now() // the allocation is done when the answer comes
		if _, err := client.WaitFor(ctx, pods, "default", name, client.ResourceVersion(p), func(p *core.Pod, _ bool) bool { return p.Status.Reason == "Evicted" }); err != nil {
			t.Fatalf("%s never evicted: %v", name, err)
		}
		lat = append(lat, time.Since(crossed))
		_ = pods.Delete(ctx, "default", name, client.DeleteOptions{})
	}
	s := sortedDurations(lat)
	benchreport.Append(t, report, fmt.Sprintf(`
## Eviction reaction (test/e2e TestBenchEvictionReaction)

Measured %s. One real node of 1 GiB (--capacity) whose agent evicts below memory.available 874Mi (hard); a BestEffort labapp pod allocates 250 MiB on request (from the node), crossing the threshold when the request returns; the time until the pod is seen Failed with reason Evicted through the API (stopped without grace, status written). The agent samples cgroups every second and judges its thresholds every second. 10 rounds.

| p50 | p99 (the slowest of 10) | fastest |
|---|---|---|
| %.2f s | %.2f s | %.2f s |

For comparison, the kubelet's eviction manager observes its signals every 10 s.
`, time.Now().UTC().Format("2006-01-02 15:04 MST"), s[len(s)/2].Seconds(), s[len(s)-1].Seconds(), s[0].Seconds()))
}
