package controllermanager_test

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	testcluster "github.com/kobune/kobune/test/cluster"
)

func cluster(t *testing.T, ctx context.Context, nodes int) *client.Client {
	return testcluster.Start(t, ctx, testcluster.Options{Nodes: nodes}).Client
}

func newDeployment(name string, replicas int32, image string, surge, unavailable meta.IntOrString) *apps.Deployment {
	return &apps.Deployment{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "default"},
		Spec: apps.DeploymentSpec{Replicas: &replicas, Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Strategy: apps.DeploymentStrategy{Type: apps.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &apps.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "app", Image: image}}}}}}
}

// rolledOut waits until the Deployment's rollout is complete.
func rolledOut(t *testing.T, ctx context.Context, c *client.Client, name string) *apps.Deployment {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d, err := client.WaitFor(wctx, client.For[*apps.Deployment](c), "default", name, 0, func(d *apps.Deployment, _ bool) bool {
		want := *d.Spec.Replicas
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want && d.Status.Replicas == want && d.Status.AvailableReplicas == want
	})
	if err != nil {
		t.Fatalf("rollout of %s: %v", name, err)
	}
	return d
}

// activePods lists the Deployment's pods that are not terminating.
func activePods(t *testing.T, ctx context.Context, c *client.Client, app string) []*core.Pod {
	t.Helper()
	pods, _, err := client.For[*core.Pod](c).List(ctx, "default", client.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	var out []*core.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func update(t *testing.T, ctx context.Context, c *client.Client, name string, change func(*apps.Deployment)) {
	t.Helper()
	retryUpdate(t, ctx, client.For[*apps.Deployment](c), "default", name, change)
}

// TestDeploymentLifecycle: create, scale up and down, a deleted pod is
// replaced, a rolling update never leaves the bounds at any observed step,
// and a rollback restores the previous template under a new revision.
func TestDeploymentLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := cluster(t, ctx, 2)
	ds := client.For[*apps.Deployment](c)
	if _, err := ds.Create(ctx, newDeployment("web", 4, "kobune.local/labapp:1.0", meta.FromInt(1), meta.FromInt(1))); err != nil {
		t.Fatal(err)
	}
	d := rolledOut(t, ctx, c, "web")
	if d.Annotations[apps.RevisionAnnotation] != "1" {
		t.Errorf("revision %q, want 1", d.Annotations[apps.RevisionAnnotation])
	}
	if n := len(activePods(t, ctx, c, "web")); n != 4 {
		t.Errorf("%d pods, want 4", n)
	}

	// Scale up, then down.
	update(t, ctx, c, "web", func(d *apps.Deployment) { six := int32(6); d.Spec.Replicas = &six })
	rolledOut(t, ctx, c, "web")
	update(t, ctx, c, "web", func(d *apps.Deployment) { three := int32(3); d.Spec.Replicas = &three })
	rolledOut(t, ctx, c, "web")
	waitPods(t, ctx, c, "web", 3)

	// A deleted pod is replaced.
	victim := activePods(t, ctx, c, "web")[0]
	if err := client.For[*core.Pod](c).Delete(ctx, "default", victim.Name, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ctx, c, "web", 3, victim.Name)

	// Rolling update to 2.0, watched pod by pod: never more than
	// replicas + maxSurge (4) pods, never fewer than replicas −
	// maxUnavailable (2) ready ones.
	_, rev, err := client.For[*core.Pod](c).List(ctx, "default", client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.For[*core.Pod](c).Watch(ctx, "default", client.ListOptions{LabelSelector: "app=web"}, rev)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]*core.Pod{}
	for _, p := range activePods(t, ctx, c, "web") {
		state[p.Name] = p
	}
	update(t, ctx, c, "web", func(d *apps.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "kobune.local/labapp:2.0" })
	steps := 0
	for steps = 0; ; steps++ {
		select {
		case ev := <-w.Events:
			if ev.Type == "DELETED" || ev.Object.DeletionTimestamp != nil {
				delete(state, ev.Object.Name)
			} else {
				state[ev.Object.Name] = ev.Object
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("rollout stalled after %d steps", steps)
		}
		total, ready, updated := 0, 0, 0
		for _, p := range state {
			total++
			if isReady(p) {
				ready++
				if p.Spec.Containers[0].Image == "kobune.local/labapp:2.0" {
					updated++
				}
			}
		}
		if total > 4 || (ready < 2 && steps > 0) {
			t.Fatalf("step %d: %d pods, %d ready: outside [2 ready, 4 pods]", steps, total, ready)
		}
		if updated == 3 && total == 3 {
			break
		}
	}
	d = rolledOut(t, ctx, c, "web")
	if d.Annotations[apps.RevisionAnnotation] != "2" {
		t.Errorf("revision after the update %q, want 2", d.Annotations[apps.RevisionAnnotation])
	}
	t.Logf("rolling update checked at %d observed pod changes", steps)

	// Roll back: put revision 1's template back (what `kobectl rollout
	// undo` does); its ReplicaSet becomes the new one, as revision 3.
	rss, _, err := client.For[*apps.ReplicaSet](c).List(ctx, "default", client.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var rev1 *apps.ReplicaSet
	for _, rs := range rss {
		if apps.Revision(rs) == 1 {
			rev1 = rs
		}
	}
	if rev1 == nil || len(rss) != 2 {
		t.Fatalf("ReplicaSets %d, revision 1 found %v", len(rss), rev1 != nil)
	}
	update(t, ctx, c, "web", func(d *apps.Deployment) { d.Spec.Template.Spec = rev1.Spec.Template.Spec })
	d = rolledOut(t, ctx, c, "web")
	if d.Annotations[apps.RevisionAnnotation] != "3" {
		t.Errorf("revision after rollback %q, want 3", d.Annotations[apps.RevisionAnnotation])
	}
	for _, p := range activePods(t, ctx, c, "web") {
		if p.Spec.Containers[0].Image != "kobune.local/labapp:1.0" || p.Labels[apps.PodTemplateHashLabel] != rev1.Labels[apps.PodTemplateHashLabel] {
			t.Errorf("after rollback %s runs %s (hash %s)", p.Name, p.Spec.Containers[0].Image, p.Labels[apps.PodTemplateHashLabel])
		}
	}
	events, _, _ := client.For[*core.Event](c).List(ctx, "default", client.ListOptions{FieldSelector: "involvedObject.name=web,reason=ScalingReplicaSet"})
	if len(events) == 0 {
		t.Error("no ScalingReplicaSet events")
	}
}

func isReady(p *core.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodReady && c.Status == meta.ConditionTrue {
			return true
		}
	}
	return false
}

// waitPods waits until n pods of the app are active and ready, none of
// them named in gone.
func waitPods(t *testing.T, ctx context.Context, c *client.Client, app string, n int, gone ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pods := activePods(t, ctx, c, app)
		ok := len(pods) == n
		for _, p := range pods {
			for _, g := range gone {
				ok = ok && p.Name != g
			}
			ok = ok && isReady(p)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d ready pods of %s without %v; have %d", n, app, gone, len(pods))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestGarbageCollection: background deletion removes a Deployment's
// ReplicaSets and pods after it; foreground keeps the Deployment until they
// are gone; orphan leaves the pods without their owner.
func TestGarbageCollection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := cluster(t, ctx, 1)
	ds := client.For[*apps.Deployment](c)
	rsc := client.For[*apps.ReplicaSet](c)
	for _, name := range []string{"bg", "fg", "orph"} {
		if _, err := ds.Create(ctx, newDeployment(name, 2, "kobune.local/labapp:1.0", meta.FromInt(1), meta.FromInt(0))); err != nil {
			t.Fatal(err)
		}
		rolledOut(t, ctx, c, name)
	}
	gone := func(app string) bool {
		rss, _, _ := rsc.List(ctx, "default", client.ListOptions{LabelSelector: "app=" + app})
		pods, _, _ := client.For[*core.Pod](c).List(ctx, "default", client.ListOptions{LabelSelector: "app=" + app})
		return len(rss) == 0 && len(pods) == 0
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s", what)
			}
		}
	}

	if err := ds.Delete(ctx, "default", "bg", client.DeleteOptions{PropagationPolicy: "Background"}); err != nil {
		t.Fatal(err)
	}
	eventually("background: ReplicaSets and pods removed", func() bool { return gone("bg") })

	if err := ds.Delete(ctx, "default", "fg", client.DeleteOptions{PropagationPolicy: "Foreground"}); err != nil {
		t.Fatal(err)
	}
	d, err := ds.Get(ctx, "default", "fg")
	if err != nil || d.DeletionTimestamp == nil {
		t.Fatalf("foreground: the Deployment should wait for its dependents (%v)", err)
	}
	eventually("foreground: dependents, then the Deployment, removed", func() bool {
		_, err := ds.Get(ctx, "default", "fg")
		return gone("fg") && client.IsNotFound(err)
	})

	rss, _, _ := rsc.List(ctx, "default", client.ListOptions{LabelSelector: "app=orph"})
	if len(rss) != 1 {
		t.Fatalf("%d ReplicaSets of orph", len(rss))
	}
	if err := ds.Delete(ctx, "default", "orph", client.DeleteOptions{PropagationPolicy: "Orphan"}); err != nil {
		t.Fatal(err)
	}
	eventually("orphan: the Deployment removed, its ReplicaSet left without owner", func() bool {
		_, err := ds.Get(ctx, "default", "orph")
		rs, rerr := rsc.Get(ctx, "default", rss[0].Name)
		return client.IsNotFound(err) && rerr == nil && len(rs.OwnerReferences) == 0
	})
	if n := len(activePods(t, ctx, c, "orph")); n != 2 {
		t.Errorf("orphaned ReplicaSet has %d pods, want 2 still running", n)
	}

	// A circle of owners (the conformance suite's "should not be blocked by
	// dependency circle"): c1 owned by c3, c2 by c1, c3 by c2, each
	// blocking its owner's deletion. A foreground deletion of c1 takes all
	// three; nobody waits for anybody for good.
	uids := map[string]string{}
	for _, name := range []string{"c1", "c2", "c3"} {
		d, err := ds.Create(ctx, newDeployment(name, 0, "kobune.local/labapp:1.0", meta.FromInt(1), meta.FromInt(0)))
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = d.UID
	}
	yes := true
	for name, owner := range map[string]string{"c1": "c3", "c2": "c1", "c3": "c2"} {
		for { // the Deployment controller writes status meanwhile
			d, err := ds.Get(ctx, "default", name)
			if err != nil {
				t.Fatal(err)
			}
			d.OwnerReferences = []meta.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: owner, UID: uids[owner], BlockOwnerDeletion: &yes}}
			if _, err = ds.Update(ctx, d); err == nil {
				break
			} else if !client.IsConflict(err) {
				t.Fatal(err)
			}
		}
	}
	if err := ds.Delete(ctx, "default", "c1", client.DeleteOptions{PropagationPolicy: "Foreground", UID: uids["c1"]}); err != nil {
		t.Fatal(err)
	}
	eventually("a circle of owners deleted in the foreground", func() bool {
		l, _, _ := ds.List(ctx, "default", client.ListOptions{})
		for _, d := range l {
			if uids[d.Name] != "" {
				return false
			}
		}
		return true
	})
}

// TestNodeFailureReplacesPods: a node whose agent stops renewing its Lease
// goes Unknown and is tainted unreachable; its pods are evicted once their
// toleration (from the API server's default) runs out, and the Deployment's
// replacements run on the other node.
func TestNodeFailureReplacesPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := testcluster.Start(t, ctx, testcluster.Options{Nodes: 2, DefaultTolerationSeconds: 2, NodeMonitorGracePeriod: 2 * time.Second})
	c := cl.Client
	if _, err := client.For[*apps.Deployment](c).Create(ctx, newDeployment("web", 4, "kobune.local/labapp:1.0", meta.FromInt(1), meta.FromInt(1))); err != nil {
		t.Fatal(err)
	}
	rolledOut(t, ctx, c, "web")
	onNode1 := 0
	for _, p := range activePods(t, ctx, c, "web") {
		if p.Spec.NodeName == "node-1" {
			onNode1++
		}
		var secs int64 = -1
		for _, tol := range p.Spec.Tolerations {
			if tol.Key == "node.kubernetes.io/unreachable" && tol.TolerationSeconds != nil {
				secs = *tol.TolerationSeconds
			}
		}
		if secs != 2 {
			t.Errorf("%s tolerates unreachable for %d s, want the default 2", p.Name, secs)
		}
	}
	if onNode1 == 0 {
		t.Fatal("no pod landed on node-1; nothing to test")
	}

	start := time.Now()
	cl.StopAgent("node-1")
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	n, err := client.WaitFor(wctx, client.For[*core.Node](c), "", "node-1", 0, func(n *core.Node, _ bool) bool {
		tainted := 0
		for _, tt := range n.Spec.Taints {
			if tt.Key == "node.kubernetes.io/unreachable" {
				tainted++
			}
		}
		return tainted == 2
	})
	if err != nil {
		t.Fatalf("node-1 not tainted unreachable: %v", err)
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == core.NodeReady && cond.Status != meta.ConditionUnknown {
			t.Errorf("node-1 Ready is %s, want Unknown", cond.Status)
		}
	}
	t.Logf("node-1 Unknown and tainted %v after the agent stopped", time.Since(start).Round(10*time.Millisecond))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		pods := activePods(t, ctx, c, "web")
		onNode2 := 0
		for _, p := range pods {
			if p.Spec.NodeName == "node-2" && isReady(p) {
				onNode2++
			}
		}
		if onNode2 == 4 && len(pods) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replacements not running on node-2 (%d of 4)", onNode2)
		}
	}
	t.Logf("4 pods ready on node-2 %v after node-1's agent stopped", time.Since(start).Round(10*time.Millisecond))
	evs, _, _ := client.For[*core.Event](c).List(ctx, "default", client.ListOptions{FieldSelector: "reason=TaintManagerEviction"})
	if len(evs) != onNode1 {
		t.Errorf("%d eviction events, want %d (the pods on node-1)", len(evs), onNode1)
	}
}
