package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/scheduler"
)

func mkNode(t *testing.T, ctx context.Context, c *client.Client, name, cpu string, labels map[string]string, taints ...core.Taint) {
	t.Helper()
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels}}
	n.Spec.Taints = taints
	n.Status.Allocatable = resource.List{resource.CPU: resource.MustParse(cpu), resource.Memory: resource.MustParse("8Gi"), resource.Pods: resource.MustParse("110")}
	n.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: meta.ConditionTrue}}
	if _, err := client.For[*core.Node](c).Create(ctx, n); err != nil {
		t.Fatal(err)
	}
}

func mkPod(t *testing.T, ctx context.Context, c *client.Client, name, cpu string, mutate ...func(*core.Pod)) *core.Pod {
	t.Helper()
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{Containers: []core.Container{{
		Name: "c", Image: "i", Resources: core.ResourceRequirements{Requests: resource.List{resource.CPU: resource.MustParse(cpu)}}}}}}
	for _, m := range mutate {
		m(p)
	}
	created, err := client.For[*core.Pod](c).Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func boundTo(t *testing.T, ctx context.Context, c *client.Client, name string) string {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	p, err := client.WaitFor(wctx, client.For[*core.Pod](c), "default", name, 0, func(p *core.Pod, _ bool) bool { return p.Spec.NodeName != "" })
	if err != nil {
		t.Fatal(err)
	}
	return p.Spec.NodeName
}

// TestSchedulesByResourcesTaintsAndSelectors runs the real scheduler against
// the real API server with Node objects (no agents).
func TestSchedulesByResourcesTaintsAndSelectors(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Client
	mkNode(t, ctx, c, "small", "1", map[string]string{"zone": "a"})
	mkNode(t, ctx, c, "big", "4", map[string]string{"zone": "b"})
	mkNode(t, ctx, c, "gpu", "8", map[string]string{"zone": "b"}, core.Taint{Key: "dedicated", Value: "gpu", Effect: core.TaintNoSchedule})
	sched := scheduler.New(scheduler.Config{BackoffBase: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond, Logf: t.Logf}, c)
	go sched.Run(ctx)

	mkPod(t, ctx, c, "wide", "3")
	if got := boundTo(t, ctx, c, "wide"); got != "big" {
		t.Errorf("a 3-cpu pod went to %s, want big (small is too small, gpu is tainted)", got)
	}
	// The decision record, stored by the bind, names every node's verdict.
	wide, err := client.For[*core.Pod](c).Get(ctx, "default", "wide")
	if err != nil {
		t.Fatal(err)
	}
	record := wide.Annotations[scheduler.DecisionAnnotation]
	for _, want := range []string{"big: score", "<- chosen", "small: rejected by NodeResourcesFit (Insufficient cpu)", "gpu: rejected by TaintToleration (node(s) had untolerated taint {dedicated: gpu})"} {
		if !strings.Contains(record, want) {
			t.Errorf("decision record %q lacks %q", record, want)
		}
	}
	mkPod(t, ctx, c, "in-a", "100m", func(p *core.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} })
	if got := boundTo(t, ctx, c, "in-a"); got != "small" {
		t.Errorf("nodeSelector zone=a went to %s", got)
	}
	mkPod(t, ctx, c, "gpu-job", "6", func(p *core.Pod) {
		p.Spec.Tolerations = []core.Toleration{{Key: "dedicated", Operator: "Equal", Value: "gpu", Effect: core.TaintNoSchedule}}
	})
	if got := boundTo(t, ctx, c, "gpu-job"); got != "gpu" {
		t.Errorf("tolerating pod went to %s, want gpu", got)
	}

	// Too big for anything: a FailedScheduling event explains, then a new node helps.
	huge := mkPod(t, ctx, c, "huge", "16")
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	events := client.For[*core.Event](c)
	w, err := events.Watch(wctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=huge,reason=FailedScheduling"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.Events
	want := "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu. " +
		"preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
	if ev.Object.Message != want || ev.Object.InvolvedObject.UID != huge.UID {
		t.Errorf("FailedScheduling message %q, want %q", ev.Object.Message, want)
	}
	pending, err := client.WaitFor(wctx, client.For[*core.Pod](c), "default", "huge", 0, func(p *core.Pod, _ bool) bool {
		for _, cond := range p.Status.Conditions {
			if cond.Type == core.PodScheduled && cond.Reason == "Unschedulable" {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no PodScheduled=False condition on the pending pod: %v", err)
	}
	if got := pending.Status.Conditions[len(pending.Status.Conditions)-1].Message; got != want {
		t.Errorf("condition message %q", got)
	}
	mkNode(t, ctx, c, "huge-node", "32", nil)
	if got := boundTo(t, ctx, c, "huge"); got != "huge-node" {
		t.Errorf("huge went to %s after a big node appeared", got)
	}
	if !strings.Contains(ev.Object.Source.Component, "default-scheduler") {
		t.Errorf("event source %q", ev.Object.Source.Component)
	}
	var scheduled, unschedulable dto.Metric
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		// The counter moves right after the bind returns, the watch may be faster.
		if _ = sched.Metrics.Attempts.WithLabelValues("scheduled").Write(&scheduled); scheduled.Counter.GetValue() == 4 {
			break
		}
	}
	_ = sched.Metrics.Attempts.WithLabelValues("unschedulable").Write(&unschedulable)
	if scheduled.Counter.GetValue() != 4 || unschedulable.Counter.GetValue() < 1 {
		t.Errorf("attempts: scheduled %v (want 4), unschedulable %v (want ≥ 1)", scheduled.Counter.GetValue(), unschedulable.Counter.GetValue())
	}
}

// TestExtendedResources: a pod asking for an extended resource
// (example.com/dongle) goes only to a node that advertises enough of it
// beside what its pods hold, waits with a FailedScheduling that names the
// resource, and is bound once the node advertises more.
func TestExtendedResources(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Client
	const dongle = resource.Name("example.com/dongle")
	mkNode(t, ctx, c, "plain", "8", nil)
	mkNode(t, ctx, c, "gadget", "1", nil)
	nodes := client.For[*core.Node](c)
	advertise := func(n int64) {
		t.Helper()
		nd, err := nodes.Get(ctx, "", "gadget")
		if err != nil {
			t.Fatal(err)
		}
		nd.Status.Capacity = resource.List{dongle: resource.NewQuantity(n, resource.DecimalSI)}
		nd.Status.Allocatable[dongle] = resource.NewQuantity(n, resource.DecimalSI)
		if _, err := nodes.UpdateStatus(ctx, nd); err != nil {
			t.Fatal(err)
		}
	}
	advertise(2)
	sched := scheduler.New(scheduler.Config{BackoffBase: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond, Logf: t.Logf}, c)
	go sched.Run(ctx)
	dongles := func(n int64) func(*core.Pod) {
		return func(p *core.Pod) {
			p.Spec.Containers[0].Resources.Limits = resource.List{dongle: resource.NewQuantity(n, resource.DecimalSI)}
		}
	}
	mkPod(t, ctx, c, "one", "100m", dongles(1))
	if got := boundTo(t, ctx, c, "one"); got != "gadget" {
		t.Errorf("a pod asking for a dongle went to %s, want gadget (the only node that has them)", got)
	}
	mkPod(t, ctx, c, "two", "100m", dongles(2))
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	w, err := client.For[*core.Event](c).Watch(wctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=two,reason=FailedScheduling"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-w.Events; !strings.Contains(ev.Object.Message, "2 Insufficient example.com/dongle") {
		t.Errorf("FailedScheduling %q, want both nodes short of example.com/dongle", ev.Object.Message)
	}
	advertise(3)
	if got := boundTo(t, ctx, c, "two"); got != "gadget" {
		t.Errorf("after the node advertised more dongles, two went to %s", got)
	}
}

// TestNoOvercommit: pods created faster than binds land never overcommit a
// node (the assumed pods count until the informer sees the binds).
func TestNoOvercommit(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Client
	mkNode(t, ctx, c, "a", "2", nil)
	mkNode(t, ctx, c, "b", "2", nil)
	go scheduler.New(scheduler.Config{BackoffBase: 100 * time.Millisecond, BackoffMax: 300 * time.Millisecond, Logf: func(string, ...any) {}}, c).Run(ctx)
	for i := range 10 {
		mkPod(t, ctx, c, "p"+string(rune('0'+i)), "500m")
	}
	w, err := client.For[*core.Pod](c).Watch(ctx, "default", client.ListOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	bound := map[string]bool{}
	for ev := range w.Events {
		if ev.Object.Spec.NodeName != "" {
			bound[ev.Object.Name] = true
		}
		if len(bound) == 8 {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // the other two must stay pending
	pods, _, err := client.For[*core.Pod](c).List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, p := range pods {
		count[p.Spec.NodeName]++
	}
	if count["a"] != 4 || count["b"] != 4 || count[""] != 2 {
		t.Errorf("placement %v: want 4 on a, 4 on b (2 cpu / 500m each) and 2 pending", count)
	}
}
