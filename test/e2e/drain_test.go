package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/drain"
	"github.com/kobune/kobune/scheduler"
)

// TestDrainKeepsTheBudgetAndQuotaRefuses, on two real nodes with the
// controllers and the scheduler: a Deployment of 4 labapp pods (a
// readiness probe, so a replacement is Ready only once it answers) with a
// budget of minAvailable 3; kobectl drain of the node holding pods evicts
// them one budget step at a time — at every change a watch sees, at least
// 3 pods are Ready — and ends with none of them there. Then a quota of 5
// pods in the namespace refuses the pod that would be the 6th.
func TestDrainKeepsTheBudgetAndQuotaRefuses(t *testing.T) {
	requireRoot(t)
	srv, _, ctx := startWithControllers(t, 6*time.Minute, "10.244.92.0/24", "10.244.93.0/24")
	go scheduler.New(scheduler.Config{Logf: func(string, ...any) {}}, componentClient(t, srv, "scheduler")).Run(ctx)
	c := srv.Client
	drain.RetryInterval = time.Second
	four := int32(4)
	labels := map[string]string{"app": "web"}
	if _, err := client.For[*apps.Deployment](c).Create(ctx, &apps.Deployment{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: apps.DeploymentSpec{Replicas: &four, Selector: &meta.LabelSelector{MatchLabels: labels},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: labels}, Spec: core.PodSpec{Containers: []core.Container{{Name: "app",
				Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever, Args: []string{"--start-delay", "2s"},
				ReadinessProbe: &core.Probe{ProbeHandler: core.ProbeHandler{HTTPGet: &core.HTTPGetAction{Path: "/readyz", Port: meta.FromInt(8080)}}, PeriodSeconds: 1}}}}}}}); err != nil {
		t.Fatal(err)
	}
	three := meta.FromInt(3)
	if _, err := client.For[*policy.PodDisruptionBudget](c).Create(ctx, &policy.PodDisruptionBudget{ObjectMeta: meta.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policy.PodDisruptionBudgetSpec{MinAvailable: &three, Selector: &meta.LabelSelector{MatchLabels: labels}}}); err != nil {
		t.Fatal(err)
	}
	pdbs := client.For[*policy.PodDisruptionBudget](c)
	if _, err := client.WaitFor(ctx, pdbs, "default", "web", 0, func(b *policy.PodDisruptionBudget, _ bool) bool {
		return b.Status.CurrentHealthy == 4 && b.Status.DisruptionsAllowed == 1
	}); err != nil {
		t.Fatalf("the budget never saw 4 healthy pods: %v", err)
	}
	pods := client.For[*core.Pod](c)
	list, _, _ := pods.List(ctx, "default", client.ListOptions{LabelSelector: "app=web"})
	count := map[string]int{}
	for _, p := range list {
		count[p.Spec.NodeName]++
	}
	drained := "node-1"
	if count["node-2"] > count["node-1"] {
		drained = "node-2"
	}
	// Every change the watch sees: how many web pods are Ready.
	var mu sync.Mutex
	ready := map[string]bool{}
	for _, p := range list {
		ready[p.Name] = podReadyNow(p)
	}
	lowest, changes := 4, 0
	wctx, stop := context.WithCancel(ctx)
	w, err := pods.Watch(wctx, "default", client.ListOptions{LabelSelector: "app=web"}, client.ResourceVersion(list[len(list)-1]))
	if err != nil {
		t.Fatal(err)
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.Events {
			p := ev.Object
			mu.Lock()
			ready[p.Name] = ev.Type != "DELETED" && p.DeletionTimestamp == nil && podReadyNow(p)
			n := 0
			for _, r := range ready {
				if r {
					n++
				}
			}
			lowest, changes = min(lowest, n), changes+1
			mu.Unlock()
		}
	}()
	out, errOut, code := kobectl(ctx, srv.Addr(), "drain", drained, "--timeout=3m")
	if code != 0 || !strings.Contains(out, "node/"+drained+" drained") {
		t.Fatalf("drain %s (%d of its pods):\n%s%s", drained, count[drained], out, errOut)
	}
	time.Sleep(time.Second)
	stop()
	<-watched
	mu.Lock()
	if lowest < 3 {
		t.Errorf("during the drain only %d web pods were Ready at one point of %d changes; the budget says 3", lowest, changes)
	}
	t.Logf("drained %s (%d web pods there): %d changes seen, never fewer than %d Ready; refusals retried: %d", drained, count[drained], changes, lowest, strings.Count(errOut, "Cannot evict pod"))
	mu.Unlock()
	if count[drained] > 1 && !strings.Contains(errOut, "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Errorf("draining %d pods under a budget allowing 1 should have been refused at least once:\n%s", count[drained], errOut)
	}
	left, _, _ := pods.List(ctx, "default", client.ListOptions{LabelSelector: "app=web"})
	for _, p := range left {
		if p.Spec.NodeName == drained && p.DeletionTimestamp == nil {
			t.Errorf("pod %s still on %s", p.Name, drained)
		}
	}

	// A quota of 5 pods (the 4 web pods are there) refuses the 6th.
	if out, errOut, code := kobectl(ctx, srv.Addr(), "create", "quota", "pods", "--hard=pods=5"); code != 0 || out != "resourcequota/pods created\n" {
		t.Fatalf("kobectl create quota: %d %s%s", code, out, errOut)
	}
	if _, err := client.WaitFor(ctx, client.For[*core.ResourceQuota](c), "default", "pods", 0, func(q *core.ResourceQuota, _ bool) bool {
		u, ok := q.Status.Used["pods"]
		return ok && u.Value() == 4
	}); err != nil {
		t.Fatalf("the quota never counted the 4 pods: %v", err)
	}
	mk := func(name string) error {
		_, err := pods.Create(ctx, &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"}, Spec: core.PodSpec{Containers: []core.Container{{Name: "app",
			Image: "kobune.local/labapp:1.0", ImagePullPolicy: core.PullNever}}}})
		return err
	}
	if err := mk("fifth"); err != nil {
		t.Fatalf("the 5th pod: %v", err)
	}
	err = mk("sixth")
	if err == nil || !strings.Contains(err.Error(), `pods "sixth" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=5, limited: pods=5`) {
		t.Errorf("the 6th pod: %v", err)
	}
	if _, err := pods.Get(ctx, "default", "sixth"); !client.IsNotFound(err) {
		t.Errorf("the refused pod exists: %v", err)
	}
	if p, err := waitRunning(ctx, pods, "fifth"); err != nil {
		t.Errorf("the 5th pod never ran on a real node: %v %+v", err, p)
	}
}

func waitRunning(ctx context.Context, pods *client.Typed[*core.Pod], name string) (*core.Pod, error) {
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	return client.WaitFor(wctx, pods, "default", name, 0, func(p *core.Pod, _ bool) bool { return p.Status.Phase == core.PodRunning })
}
