package nodelifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func node(ready meta.ConditionStatus, taints ...core.Taint) *core.Node {
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: "n1", CreationTimestamp: meta.Time{Time: now.Add(-time.Hour)}}}
	n.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: ready}}
	n.Spec.Taints = taints
	return n
}

func lease(age time.Duration) *coordination.Lease {
	t := meta.MicroTime{Time: now.Add(-age)}
	return &coordination.Lease{ObjectMeta: meta.ObjectMeta{Name: "n1", Namespace: leaseNamespace}, Spec: coordination.LeaseSpec{RenewTime: &t}}
}

func pod(name string, tolerationSeconds *int64) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name}}
	p.Spec.NodeName = "n1"
	p.Status.Phase = core.PodRunning
	if tolerationSeconds != nil {
		p.Spec.Tolerations = []core.Toleration{{Key: TaintUnreachable, Operator: "Exists", Effect: core.TaintNoExecute, TolerationSeconds: tolerationSeconds}}
	}
	return p
}

func fixture(n *core.Node, l *coordination.Lease, rate float64, pods ...*core.Pod) (*Controller, *controllertest.API) {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.Nodes.Seed(n)
	if l != nil {
		inf.Leases.Seed(l)
	}
	inf.Pods.Seed(pods...)
	nc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100), Config{GracePeriod: 40 * time.Second, EvictionRate: rate})
	nc.now = func() time.Time { return now }
	return nc, api
}

func taintsOf(api *controllertest.API) []core.Taint {
	up := api.Filter("update", "nodes")
	if len(up) == 0 {
		return nil
	}
	return controllertest.Decode[core.Node](up[len(up)-1]).Spec.Taints
}

func TestStaleLeaseMakesNodeUnknownAndUnreachable(t *testing.T) {
	nc, api := fixture(node(meta.ConditionTrue), lease(41*time.Second), 10)
	if _, err := nc.Reconcile(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	st := api.Filter("updatestatus", "nodes")
	if len(st) != 1 || controllertest.Decode[core.Node](st[0]).Status.Conditions[0].Status != meta.ConditionUnknown {
		t.Fatalf("status writes %v", st)
	}
	taints := taintsOf(api)
	if len(taints) != 2 || taints[0].Key != TaintUnreachable || taints[0].Effect != core.TaintNoSchedule || taints[1].Effect != core.TaintNoExecute || taints[1].TimeAdded == nil {
		t.Errorf("taints %+v", taints)
	}
}

func TestFreshLeaseWaitsUntilItExpires(t *testing.T) {
	nc, api := fixture(node(meta.ConditionTrue), lease(10*time.Second), 10)
	res, err := nc.Reconcile(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(api.Actions()) != 0 || res.RequeueAfter < 30*time.Second || res.RequeueAfter > 31*time.Second {
		t.Errorf("writes %v, requeue %v (want none, ~30s)", api.Actions(), res.RequeueAfter)
	}
}

func TestTaintsFollowReady(t *testing.T) {
	old := core.Taint{Key: TaintUnreachable, Effect: core.TaintNoExecute}
	other := core.Taint{Key: "dedicated", Value: "gpu", Effect: core.TaintNoSchedule}
	nc, api := fixture(node(meta.ConditionFalse, old, other), lease(time.Second), 10)
	if _, err := nc.Reconcile(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	taints := taintsOf(api)
	keys := map[string]int{}
	for _, tt := range taints {
		keys[tt.Key]++
	}
	if keys[TaintNotReady] != 2 || keys[TaintUnreachable] != 0 || keys["dedicated"] != 1 {
		t.Errorf("Ready False: taints %+v", taints)
	}
	nc, api = fixture(node(meta.ConditionTrue, core.Taint{Key: TaintNotReady, Effect: core.TaintNoSchedule}, other), lease(time.Second), 10)
	if _, err := nc.Reconcile(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	if taints := taintsOf(api); len(taints) != 1 || taints[0].Key != "dedicated" {
		t.Errorf("Ready True: taints %+v", taints)
	}
}

func TestEvictionHonoursTolerationSeconds(t *testing.T) {
	added := meta.Time{Time: now.Add(-100 * time.Second)}
	tainted := node(meta.ConditionUnknown, core.Taint{Key: TaintUnreachable, Effect: core.TaintNoSchedule, TimeAdded: &added},
		core.Taint{Key: TaintUnreachable, Effect: core.TaintNoExecute, TimeAdded: &added})
	s60, s300 := int64(60), int64(300)
	forever := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "forever", Namespace: "default", UID: "uid-forever"}}
	forever.Spec.NodeName = "n1"
	forever.Spec.Tolerations = []core.Toleration{{Operator: "Exists"}}
	nc, api := fixture(tainted, lease(time.Hour), 10, pod("untolerated", nil), pod("short", &s60), pod("long", &s300), forever)
	res, err := nc.Reconcile(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for _, a := range api.Filter("delete", "pods") {
		deleted[a.Name] = true
	}
	if !deleted["untolerated"] || !deleted["short"] || deleted["long"] || deleted["forever"] || len(deleted) != 2 {
		t.Errorf("evicted %v, want untolerated and short (60 s < 100 s), not long (300 s) nor forever", deleted)
	}
	if res.RequeueAfter != 200*time.Second {
		t.Errorf("requeue after %v, want 200s (when long's toleration ends)", res.RequeueAfter)
	}
	// A second pass before the cache shows the deletions deletes nothing again.
	api.Reset()
	if _, err := nc.Reconcile(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("delete", "pods")); n != 0 {
		t.Errorf("%d pods deleted twice", n)
	}
}

func TestEvictionRateLimit(t *testing.T) {
	added := meta.Time{Time: now.Add(-time.Hour)}
	tainted := node(meta.ConditionUnknown, core.Taint{Key: TaintUnreachable, Effect: core.TaintNoExecute, TimeAdded: &added})
	nc, api := fixture(tainted, lease(time.Hour), 1, pod("a", nil), pod("b", nil), pod("c", nil))
	res, err := nc.Reconcile(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("delete", "pods")); n != 1 || res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Errorf("%d evictions at 1/s, requeue %v; want 1, then again within a second", n, res.RequeueAfter)
	}
}
