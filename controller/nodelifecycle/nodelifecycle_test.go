package nodelifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const grace = 40 * time.Second

func namedNode(name string, ready meta.ConditionStatus, taints ...core.Taint) *core.Node {
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: name, CreationTimestamp: meta.Time{Time: now.Add(-time.Hour)}}}
	n.Status.Conditions = []core.NodeCondition{{Type: core.NodeReady, Status: ready}}
	n.Spec.Taints = taints
	return n
}

func node(ready meta.ConditionStatus, taints ...core.Taint) *core.Node {
	return namedNode("n1", ready, taints...)
}

func leaseAt(name string, at time.Time) *coordination.Lease {
	t := meta.MicroTime{Time: at}
	return &coordination.Lease{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: leaseNamespace}, Spec: coordination.LeaseSpec{RenewTime: &t}}
}

func lease(age time.Duration) *coordination.Lease { return leaseAt("n1", now.Add(-age)) }

func pod(name string, tolerationSeconds *int64) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name}}
	p.Spec.NodeName = "n1"
	p.Status.Phase = core.PodRunning
	if tolerationSeconds != nil {
		p.Spec.Tolerations = []core.Toleration{{Key: TaintUnreachable, Operator: "Exists", Effect: core.TaintNoExecute, TolerationSeconds: tolerationSeconds}}
	}
	return p
}

// world is a controller over a cache the test changes, with a clock it moves.
type world struct {
	nc    *Controller
	api   *controllertest.API
	inf   *controller.Informers
	clock time.Time
}

func newWorld(nodes []*core.Node, leases []*coordination.Lease, rate float64, pods ...*core.Pod) *world {
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.Nodes.Seed(nodes...)
	inf.Leases.Seed(leases...)
	inf.Pods.Seed(pods...)
	w := &world{api: api, inf: inf, clock: now}
	w.nc = New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100), Config{GracePeriod: grace, EvictionRate: rate})
	w.nc.now = func() time.Time { return w.clock }
	w.nc.Loop.Logf = func(string, ...any) {}
	return w
}

// fixture is n1 (as given) beside a healthy n2 whose agent keeps renewing:
// one node's trouble is then not a full disruption.
func fixture(n *core.Node, l *coordination.Lease, rate float64, pods ...*core.Pod) (*Controller, *controllertest.API) {
	leases := []*coordination.Lease{leaseAt("n2", now)}
	if l != nil {
		leases = append(leases, l)
	}
	w := newWorld([]*core.Node{n, namedNode("n2", meta.ConditionTrue)}, leases, rate, pods...)
	return w.nc, w.api
}

// renew has the named nodes' agents renew their Leases at the current time.
func (w *world) renew(names ...string) {
	for _, name := range names {
		w.inf.Leases.Seed(leaseAt(name, w.clock))
	}
}

func (w *world) reconcile(t *testing.T, names ...string) reconcile.Result {
	t.Helper()
	var res reconcile.Result
	for _, name := range names {
		var err error
		if res, err = w.nc.Reconcile(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// written applies the controller's last write of the node to the cache, as
// the informer would.
func (w *world) written(name string) {
	var last *core.Node
	for _, a := range w.api.Actions() {
		if a.Resource == "nodes" && a.Name == name && (a.Verb == "update" || a.Verb == "updatestatus") {
			n := controllertest.Decode[core.Node](a)
			if a.Verb == "updatestatus" && last != nil {
				last.Status = n.Status
				continue
			}
			if last != nil && a.Verb == "update" {
				n.Status = last.Status
			}
			last = &n
		}
	}
	if last != nil {
		w.inf.Nodes.Seed(last)
	}
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
	// The controller saw the Lease 41 s ago and never a newer one.
	nc.health["n1"] = probe{heartbeat: now.Add(-41 * time.Second), at: now.Add(-41 * time.Second)}
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
	nc.health["n1"] = probe{heartbeat: now.Add(-10 * time.Second), at: now.Add(-10 * time.Second)}
	res, err := nc.Reconcile(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if len(api.Actions()) != 0 || res.RequeueAfter < 30*time.Second || res.RequeueAfter > 31*time.Second {
		t.Errorf("writes %v, requeue %v (want none, ~30s)", api.Actions(), res.RequeueAfter)
	}
}

// Defect 1 of issue #10: after a control-plane outage every Lease is old.
// A controller that has just started must give each node a full grace
// period from its own start, not judge the Leases' renewTime.
func TestSilenceCountsFromTheControllersOwnStart(t *testing.T) {
	w := newWorld([]*core.Node{namedNode("n1", meta.ConditionTrue), namedNode("n2", meta.ConditionTrue)},
		[]*coordination.Lease{leaseAt("n1", now.Add(-2*time.Minute)), leaseAt("n2", now.Add(-2*time.Minute))}, 10)
	res := w.reconcile(t, "n1", "n2")
	if len(w.api.Actions()) != 0 {
		t.Fatalf("a controller that just started wrote %v for Leases 2 minutes old", w.api.Actions())
	}
	if res.RequeueAfter < grace || res.RequeueAfter > grace+time.Second {
		t.Errorf("requeue after %v, want the whole grace period %v", res.RequeueAfter, grace)
	}
	// The agents come back 2 s later and renew; at the old deadline nothing happens.
	w.clock = now.Add(2 * time.Second)
	w.renew("n1", "n2")
	w.reconcile(t, "n1", "n2")
	w.clock = now.Add(grace + time.Second)
	w.reconcile(t, "n1", "n2")
	if len(w.api.Actions()) != 0 {
		t.Errorf("renewing nodes were written: %v", w.api.Actions())
	}
	// A node that stays silent a whole grace period after its last renewal is Unknown.
	w.clock = now.Add(2*time.Second + grace)
	w.renew("n2")
	w.reconcile(t, "n2", "n1")
	if st := w.api.Filter("updatestatus", "nodes"); len(st) != 1 || st[0].Name != "n1" {
		t.Errorf("status writes %v, want n1 marked Unknown", st)
	}
}

// Every node silent at once: conditions go Unknown and new pods are kept
// away (NoSchedule), but no node gets NoExecute and nothing is evicted.
// When one node is back, the others get a fresh grace period; one that then
// stays silent is evicted as usual.
func TestFullDisruptionEvictsNothing(t *testing.T) {
	w := newWorld([]*core.Node{namedNode("n1", meta.ConditionTrue), namedNode("n2", meta.ConditionTrue)},
		[]*coordination.Lease{leaseAt("n1", now), leaseAt("n2", now)}, 10, pod("a", nil), pod("b", nil))
	w.reconcile(t, "n1", "n2")
	w.clock = now.Add(grace + time.Second)
	for range 3 {
		w.reconcile(t, "n1", "n2")
		w.written("n1")
		w.written("n2")
	}
	if got := len(w.api.Filter("updatestatus", "nodes")); got != 2 {
		t.Errorf("%d status writes, want both nodes marked Unknown", got)
	}
	for _, a := range w.api.Filter("update", "nodes") {
		for _, tt := range controllertest.Decode[core.Node](a).Spec.Taints {
			if tt.Effect == core.TaintNoExecute {
				t.Errorf("node %s got %s:NoExecute in full disruption", a.Name, tt.Key)
			}
		}
	}
	if d := w.api.Filter("delete", "pods"); len(d) != 0 {
		t.Errorf("evicted %d pods in full disruption", len(d))
	}
	if !w.nc.inFullDisruption() {
		t.Fatal("not in full disruption mode")
	}
	// n2's agent is back and posts Ready; n1 stays silent.
	w.clock = now.Add(grace + 5*time.Second)
	w.renew("n2")
	n2 := namedNode("n2", meta.ConditionTrue)
	w.inf.Nodes.Seed(n2)
	w.api.Reset()
	w.reconcile(t, "n2", "n1")
	if w.nc.inFullDisruption() {
		t.Fatal("still in full disruption with n2 back")
	}
	if d := w.api.Filter("delete", "pods"); len(d) != 0 {
		t.Errorf("evicted %d pods at once on leaving full disruption; n1 gets a fresh grace period first", len(d))
	}
	w.clock = now.Add(2*grace + 6*time.Second)
	w.renew("n2")
	for range 3 {
		w.reconcile(t, "n2", "n1")
		w.written("n1")
	}
	if d := w.api.Filter("delete", "pods"); len(d) != 2 {
		t.Errorf("evicted %d pods from n1, silent a grace period after the disruption ended; want 2", len(d))
	}
}

// Three of four nodes silent is a partial disruption: in a small cluster
// evictions stop there; a zone wholly down while another is up is a zone
// outage, and its pods are evicted.
func TestPartialDisruptionAndZoneOutage(t *testing.T) {
	zoned := func(name, zone string) *core.Node {
		n := namedNode(name, meta.ConditionTrue)
		n.Labels = map[string]string{ZoneLabel: zone}
		return n
	}
	tests := []struct {
		name      string
		nodes     []*core.Node
		silent    []string
		wantEvict int
	}{
		{"3 of 4 silent", []*core.Node{zoned("n1", ""), zoned("n2", ""), zoned("n3", ""), zoned("n4", "")}, []string{"n1", "n2", "n3"}, 0},
		{"2 of 4 silent", []*core.Node{zoned("n1", ""), zoned("n2", ""), zoned("n3", ""), zoned("n4", "")}, []string{"n1", "n2"}, 1},
		{"zone a down, zone b up", []*core.Node{zoned("n1", "a"), zoned("n2", "a"), zoned("n3", "b")}, []string{"n1", "n2"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var leases []*coordination.Lease
			var names []string
			for _, n := range tt.nodes {
				leases = append(leases, leaseAt(n.Name, now))
				names = append(names, n.Name)
			}
			w := newWorld(tt.nodes, leases, 10, pod("a", nil))
			w.reconcile(t, names...)
			w.clock = now.Add(grace + time.Second)
			silent := map[string]bool{}
			for _, s := range tt.silent {
				silent[s] = true
			}
			for _, n := range names {
				if !silent[n] {
					w.renew(n)
				}
			}
			for range 3 {
				w.reconcile(t, names...)
				for _, n := range names {
					w.written(n)
				}
			}
			if d := w.api.Filter("delete", "pods"); len(d) != tt.wantEvict {
				t.Errorf("evicted %d pods from n1, want %d", len(d), tt.wantEvict)
			}
		})
	}
}

// A node whose stored status is Unknown but whose Lease is being renewed
// (its agent is back and about to post Ready) gets no NoExecute taint.
func TestUnknownButRenewingNodeIsNotEvicted(t *testing.T) {
	nc, api := fixture(node(meta.ConditionUnknown), lease(0), 10, pod("a", nil))
	if _, err := nc.Reconcile(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range taintsOf(api) {
		if tt.Effect == core.TaintNoExecute {
			t.Errorf("a renewing node got %s:NoExecute", tt.Key)
		}
	}
	if d := api.Filter("delete", "pods"); len(d) != 0 {
		t.Errorf("evicted %d pods from a renewing node", len(d))
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
	nc.health["n1"] = probe{heartbeat: now.Add(-time.Hour), at: now.Add(-time.Hour)}
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
	nc.health["n1"] = probe{heartbeat: now.Add(-time.Hour), at: now.Add(-time.Hour)}
	res, err := nc.Reconcile(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(api.Filter("delete", "pods")); n != 1 || res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Errorf("%d evictions at 1/s, requeue %v; want 1, then again within a second", n, res.RequeueAfter)
	}
}

// TestPressureConditionsBecomeTaints: MemoryPressure True on a healthy
// node gives it the memory-pressure NoSchedule taint (TaintNodesByCondition);
// False again takes it away.
func TestPressureConditionsBecomeTaints(t *testing.T) {
	n := node(meta.ConditionTrue)
	n.Status.Conditions = append(n.Status.Conditions, core.NodeCondition{Type: core.NodeMemoryPressure, Status: meta.ConditionTrue})
	nc, api := fixture(n, lease(time.Second), 10)
	nc.health["n1"] = probe{heartbeat: now, at: now}
	if _, err := nc.Reconcile(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	if taints := taintsOf(api); len(taints) != 1 || taints[0].Key != "node.kubernetes.io/memory-pressure" || taints[0].Effect != core.TaintNoSchedule {
		t.Fatalf("taints %+v, want memory-pressure:NoSchedule", taints)
	}
	n2 := node(meta.ConditionTrue, core.Taint{Key: "node.kubernetes.io/memory-pressure", Effect: core.TaintNoSchedule})
	n2.Status.Conditions = append(n2.Status.Conditions, core.NodeCondition{Type: core.NodeMemoryPressure, Status: meta.ConditionFalse})
	nc, api = fixture(n2, lease(time.Second), 10)
	nc.health["n1"] = probe{heartbeat: now, at: now}
	if _, err := nc.Reconcile(context.Background(), "n1"); err != nil {
		t.Fatal(err)
	}
	if up := api.Filter("update", "nodes"); len(up) != 1 || len(controllertest.Decode[core.Node](up[0]).Spec.Taints) != 0 {
		t.Errorf("the taint stayed after the pressure went: %v", up)
	}
}
