package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
	"github.com/kobune/kobune/scheduler"
)

func quietScheduler(c *client.Client) *scheduler.Scheduler {
	return scheduler.New(scheduler.Config{BackoffBase: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond, Logf: func(string, ...any) {}}, c)
}

func zoned(zone string) map[string]string { return map[string]string{"zone": zone} }

func labels(kv ...string) func(*core.Pod) {
	return func(p *core.Pod) {
		p.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// failedScheduling waits for the pod's FailedScheduling event.
func failedScheduling(t *testing.T, ctx context.Context, c *client.Client, name string) string {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	w, err := client.For[*core.Event](c).Watch(wctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=FailedScheduling"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := <-w.Events
	if !ok {
		t.Fatalf("no FailedScheduling event for %s", name)
	}
	return ev.Object.Message
}

// TestPodAffinityAntiAffinityAndSpread: pods placed together, apart and
// spread through the real API server.
func TestPodAffinityAntiAffinityAndSpread(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := s.Client
	// a1, a2 in zone a; b1 in zone b. Every node has its hostname label.
	for _, n := range []struct{ name, zone string }{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}} {
		mkNode(t, ctx, c, n.name, "8", map[string]string{"zone": n.zone, "kubernetes.io/hostname": n.name})
	}
	go quietScheduler(c).Run(ctx)

	mkPod(t, ctx, c, "db", "100m", labels("app", "db"), func(p *core.Pod) { p.Spec.NodeSelector = zoned("b") })
	if got := boundTo(t, ctx, c, "db"); got != "b1" {
		t.Fatalf("db on %s", got)
	}
	// Required affinity to db over the zone: only b1 qualifies.
	mkPod(t, ctx, c, "web", "100m", labels("app", "web"), func(p *core.Pod) {
		p.Spec.Affinity = &core.Affinity{PodAffinity: &core.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []core.PodAffinityTerm{{
			TopologyKey: "zone", LabelSelector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}
	})
	if got := boundTo(t, ctx, c, "web"); got != "b1" {
		t.Errorf("web with affinity to db's zone went to %s, want b1", got)
	}

	// Anti-affinity among replicas over the hostname: three fit, the fourth does not.
	anti := func(p *core.Pod) {
		p.Labels = map[string]string{"app": "cache"}
		p.Spec.Affinity = &core.Affinity{PodAntiAffinity: &core.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []core.PodAffinityTerm{{
			TopologyKey: "kubernetes.io/hostname", LabelSelector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}}}}}
	}
	seen := map[string]string{}
	for i := range 3 {
		name := fmt.Sprintf("cache-%d", i)
		mkPod(t, ctx, c, name, "100m", anti)
		node := boundTo(t, ctx, c, name)
		if other, ok := seen[node]; ok {
			t.Errorf("%s and %s share %s despite anti-affinity", other, name, node)
		}
		seen[node] = name
	}
	mkPod(t, ctx, c, "cache-3", "100m", anti)
	msg := failedScheduling(t, ctx, c, "cache-3")
	if !strings.HasPrefix(msg, "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.") {
		t.Errorf("fourth replica: %q", msg)
	}
	// A pod that the replicas' anti-affinity selects keeps away from them too.
	mkPod(t, ctx, c, "intruder", "100m", labels("app", "cache"))
	if msg := failedScheduling(t, ctx, c, "intruder"); !strings.HasPrefix(msg, "0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules.") {
		t.Errorf("intruder: %q", msg)
	}

	// Spread over zones with maxSkew 1: four pods go two and two, although
	// zone a has twice the nodes.
	zoneCount := map[string]int{}
	for i := range 4 {
		name := fmt.Sprintf("spread-%d", i)
		mkPod(t, ctx, c, name, "100m", func(p *core.Pod) {
			p.Labels = map[string]string{"app": "spread"}
			p.Spec.TopologySpreadConstraints = []core.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "DoNotSchedule",
				LabelSelector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
		})
		zoneCount[map[string]string{"a1": "a", "a2": "a", "b1": "b"}[boundTo(t, ctx, c, name)]]++
	}
	if zoneCount["a"] != 2 || zoneCount["b"] != 2 {
		t.Errorf("spread pods per zone %v, want 2 and 2", zoneCount)
	}
}

// actAsKubelet finishes graceful deletions on nodes without agents: a pod
// with a deletionTimestamp is removed at once, as an agent would after
// stopping its containers.
func actAsKubelet(ctx context.Context, t *testing.T, c *client.Client) {
	pods := client.For[*core.Pod](c)
	w, err := pods.Watch(ctx, "", client.ListOptions{}, 0)
	if err != nil {
		t.Error(err)
		return
	}
	zero := int64(0)
	for ev := range w.Events {
		if p := ev.Object; ev.Type != "DELETED" && p.DeletionTimestamp != nil && p.Spec.NodeName != "" {
			_ = pods.Delete(ctx, p.Namespace, p.Name, client.DeleteOptions{GracePeriodSeconds: &zero})
		}
	}
}

func priorityClass(t *testing.T, ctx context.Context, c *client.Client, name string, value int32) {
	t.Helper()
	if _, err := client.For[*scheduling.PriorityClass](c).Create(ctx, &scheduling.PriorityClass{ObjectMeta: meta.ObjectMeta{Name: name}, Value: value}); err != nil {
		t.Fatal(err)
	}
}

// TestPreemption: a high-priority pod that fits nowhere evicts the fewest,
// lowest-priority pods on one node, is nominated there, keeps the room from
// lower-priority pods, and is scheduled once the victims are gone.
func TestPreemption(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := s.Client
	priorityClass(t, ctx, c, "low", 10)
	priorityClass(t, ctx, c, "mid", 100)
	priorityClass(t, ctx, c, "high", 1000)
	mkNode(t, ctx, c, "n1", "2", nil)
	mkNode(t, ctx, c, "n2", "2", nil)
	go quietScheduler(c).Run(ctx)
	class := func(name string) func(*core.Pod) { return func(p *core.Pod) { p.Spec.PriorityClassName = name } }

	// n1: two low pods of 1 cpu; n2: one mid pod of 2 cpu.
	mkPod(t, ctx, c, "mid-0", "2", class("mid"))
	midNode := boundTo(t, ctx, c, "mid-0")
	lowNode := map[string]string{"n1": "n2", "n2": "n1"}[midNode]
	for i := range 2 {
		name := fmt.Sprintf("low-%d", i)
		mkPod(t, ctx, c, name, "1", class("low"))
		if got := boundTo(t, ctx, c, name); got != lowNode {
			t.Fatalf("%s on %s, want %s", name, got, lowNode)
		}
	}
	// The high pod needs 1 cpu: evicting one low pod is enough; the mid
	// pod is more important than either low pod.
	pods := client.For[*core.Pod](c)
	_, rev, _ := pods.List(ctx, "default", client.ListOptions{})
	high := mkPod(t, ctx, c, "high", "1", class("high"))
	nominated, err := client.WaitFor(ctx, pods, "default", "high", 0, func(p *core.Pod, _ bool) bool { return p.Status.NominatedNodeName != "" })
	if err != nil {
		t.Fatal(err)
	}
	if nominated.Status.NominatedNodeName != lowNode {
		t.Errorf("nominated %s, want %s (where the low pods are)", nominated.Status.NominatedNodeName, lowNode)
	}
	// Exactly one low pod is being deleted, gracefully.
	var victims []string
	w, err := pods.Watch(ctx, "default", client.ListOptions{}, rev)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
wait:
	for {
		select {
		case ev := <-w.Events:
			if ev.Object.DeletionTimestamp != nil && !contains(victims, ev.Object.Name) {
				victims = append(victims, ev.Object.Name)
				if !strings.HasPrefix(ev.Object.Name, "low-") {
					t.Errorf("victim %s is not a low-priority pod", ev.Object.Name)
				}
				// Marked before it was deleted, as kube-scheduler marks it.
				marked := false
				for _, cond := range ev.Object.Status.Conditions {
					marked = marked || (cond.Type == core.DisruptionTarget && cond.Status == meta.ConditionTrue && cond.Reason == "PreemptionByScheduler" &&
						cond.Message == "default-scheduler: preempting to accommodate a higher priority pod")
				}
				if !marked {
					t.Errorf("victim %s is deleted without the DisruptionTarget condition: %+v", ev.Object.Name, ev.Object.Status.Conditions)
				}
			}
		case <-deadline:
			break wait
		}
		if len(victims) == 1 {
			time.Sleep(time.Second) // a second victim would show up now
			break
		}
	}
	// A low-priority pod created now must not take the room being made.
	mkPod(t, ctx, c, "sneaky", "1", class("low"))
	time.Sleep(500 * time.Millisecond)
	go actAsKubelet(ctx, t, c)
	if got := boundTo(t, ctx, c, "high"); got != lowNode {
		t.Errorf("high bound to %s, want %s", got, lowNode)
	}
	time.Sleep(500 * time.Millisecond)
	all, _, err := pods.List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gone, pending int
	for _, p := range all {
		if p.Name == "sneaky" && p.Spec.NodeName != "" {
			t.Errorf("sneaky (low priority) was bound to %s", p.Spec.NodeName)
		}
		if p.Spec.NodeName == "" {
			pending++
		}
	}
	gone = 5 - len(all)
	if len(victims) != 1 || gone != 1 || pending != 1 {
		t.Errorf("victims %v, pods gone %d (want 1), pending %d (want 1: sneaky)", victims, gone, pending)
	}
	evs, _, _ := client.For[*core.Event](c).List(ctx, "default", client.ListOptions{FieldSelector: "reason=Preempted"})
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "Preempted by pod default/high on node "+lowNode) {
		t.Errorf("Preempted events: %+v", evs)
	}
	_ = high
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCordonedNode: a cordoned node gets no pods; uncordoning it lets a
// waiting pod in.
func TestCordonedNode(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Client
	mkNode(t, ctx, c, "only", "4", nil)
	nodes := client.For[*core.Node](c)
	n, err := nodes.Get(ctx, "", "only")
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true
	if _, err := nodes.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	go quietScheduler(c).Run(ctx)
	// A pod for another scheduler is left alone.
	mkPod(t, ctx, c, "not-mine", "1", func(p *core.Pod) { p.Spec.SchedulerName = "other-scheduler" })
	mkPod(t, ctx, c, "waiting", "1")
	if msg := failedScheduling(t, ctx, c, "waiting"); !strings.HasPrefix(msg, "0/1 nodes are available: 1 node(s) were unschedulable.") {
		t.Errorf("message %q", msg)
	}
	n, _ = nodes.Get(ctx, "", "only")
	n.Spec.Unschedulable = false
	if _, err := nodes.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	if got := boundTo(t, ctx, c, "waiting"); got != "only" {
		t.Errorf("bound to %s", got)
	}
	time.Sleep(300 * time.Millisecond)
	if p, _ := client.For[*core.Pod](c).Get(ctx, "default", "not-mine"); p == nil || p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 {
		t.Errorf("a pod with schedulerName other-scheduler was touched: %+v", p)
	}
}

// failingBinds is an API client whose first binds fail, as when the API
// server is briefly unavailable.
type failingBinds struct {
	apipb.ResourceAPIClient
	fail atomic.Int32
}

func (f *failingBinds) Bind(ctx context.Context, in *apipb.BindRequest, opts ...grpc.CallOption) (*apipb.ObjectResponse, error) {
	if f.fail.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "injected bind failure")
	}
	return f.ResourceAPIClient.Bind(ctx, in, opts...)
}

// TestBindFailure: a bind that fails undoes the assumption, so the room it
// held is free again and the pod is retried (and bound) after its back-off.
func TestBindFailure(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mkNode(t, ctx, s.Client, "one", "1", nil)
	api := &failingBinds{ResourceAPIClient: s.Client.API}
	api.fail.Store(2)
	c := &client.Client{API: api, Addr: s.Client.Addr}
	sched := quietScheduler(c)
	go sched.Run(ctx)
	mkPod(t, ctx, s.Client, "fits-exactly", "1")
	if got := boundTo(t, ctx, s.Client, "fits-exactly"); got != "one" {
		t.Errorf("bound to %s", got)
	}
	if api.fail.Load() >= 0 {
		t.Errorf("the injected failures were not hit (%d left)", api.fail.Load())
	}
	var errors dto.Metric
	_ = sched.Metrics.Attempts.WithLabelValues("error").Write(&errors)
	if errors.Counter.GetValue() != 2 {
		t.Errorf("error attempts %v, want 2", errors.Counter.GetValue())
	}
}

// TestSchedulingGates: a pod with scheduling gates is not scheduled (nor
// bound by hand) and says SchedulingGated; gates may only be taken away,
// and once the last one goes the pod is scheduled.
func TestSchedulingGates(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := s.Client
	pods := client.For[*core.Pod](c)
	mkNode(t, ctx, c, "only", "4", nil)
	sched := quietScheduler(c)
	go sched.Run(ctx)
	gated := mkPod(t, ctx, c, "gated", "100m", func(p *core.Pod) {
		p.Spec.SchedulingGates = []core.PodSchedulingGate{{Name: "example.com/quota"}, {Name: "example.com/volume"}}
	})
	if len(gated.Status.Conditions) != 1 || gated.Status.Conditions[0].Reason != core.PodReasonSchedulingGated || gated.Status.Conditions[0].Status != meta.ConditionFalse {
		t.Errorf("a new gated pod's conditions: %+v; want PodScheduled False, SchedulingGated", gated.Status.Conditions)
	}
	// A pod created after it is bound first: the scheduler has seen the
	// gated one by then, and left it.
	mkPod(t, ctx, c, "free", "100m")
	boundTo(t, ctx, c, "free")
	if p, _ := pods.Get(ctx, "default", "gated"); p == nil || p.Spec.NodeName != "" || p.Status.Conditions[0].Reason != core.PodReasonSchedulingGated {
		t.Fatalf("the gated pod after the scheduler ran: %+v", p)
	}
	if err := c.Bind(ctx, "default", "gated", gated.UID, "only"); err == nil || !strings.Contains(err.Error(), "non-empty .spec.schedulingGates") {
		t.Errorf("binding a gated pod by hand: %v", err)
	}
	// A gate may not be added; one of two taken away leaves it gated.
	p, _ := pods.Get(ctx, "default", "gated")
	p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, core.PodSchedulingGate{Name: "late"})
	if _, err := pods.Update(ctx, p); err == nil || !strings.Contains(err.Error(), "only deletion is allowed, but found new scheduling gate 'late'") {
		t.Errorf("adding a gate: %v", err)
	}
	p, _ = pods.Get(ctx, "default", "gated")
	p.Spec.SchedulingGates = p.Spec.SchedulingGates[1:]
	if _, err := pods.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	mkPod(t, ctx, c, "free2", "100m")
	boundTo(t, ctx, c, "free2")
	if p, _ := pods.Get(ctx, "default", "gated"); p == nil || p.Spec.NodeName != "" {
		t.Fatalf("the pod with one gate left was bound: %+v", p)
	}
	// The scheduler never tried it: no attempt failed (Kubernetes'
	// scheduler does not even queue a gated pod), no event names it.
	var failed dto.Metric
	if _ = sched.Metrics.Attempts.WithLabelValues("error").Write(&failed); failed.GetCounter().GetValue() != 0 {
		t.Errorf("the scheduler tried the gated pod: %v failed attempts", failed.GetCounter().GetValue())
	}
	if evs, _, err := client.For[*core.Event](c).List(ctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=gated"}); err != nil || len(evs) != 0 {
		t.Errorf("events about the gated pod: %v %+v", err, evs)
	}
	p, _ = pods.Get(ctx, "default", "gated")
	p.Spec.SchedulingGates = nil
	if _, err := pods.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := boundTo(t, ctx, c, "gated"); got != "only" {
		t.Errorf("the pod without gates went to %q", got)
	}
	if p, _ := pods.Get(ctx, "default", "gated"); p == nil || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Status != meta.ConditionTrue || p.Status.Conditions[0].Reason != "" {
		t.Errorf("conditions once scheduled: %+v", p.Status.Conditions)
	}
}
