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

// TestDaemonSet: one pod per node, placed through the scheduler; a rolling
// update replaces them one node at a time; a node that gains an untolerated
// taint loses its daemon pod, a cordoned one keeps it.
func TestDaemonSet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 3}).Client
	ds := &apps.DaemonSet{ObjectMeta: meta.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: apps.DaemonSetSpec{Selector: &meta.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "a", Image: "kobune.local/labapp:1.0"}}}}}}
	dss := client.For[*apps.DaemonSet](c)
	if _, err := dss.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	perNode := func(image string) map[string]int {
		out := map[string]int{}
		for _, p := range activePods(t, ctx, c, "agent") {
			if isReady(p) && (image == "" || p.Spec.Containers[0].Image == image) {
				out[p.Spec.NodeName]++
			}
		}
		return out
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s (pods per node: %v)", what, perNode(""))
			}
		}
	}
	eventually("a ready pod on each of the 3 nodes", func() bool {
		n := perNode("")
		return len(n) == 3 && n["node-1"] == 1 && n["node-2"] == 1 && n["node-3"] == 1
	})

	// Rolling update: never more than maxUnavailable (1) node without a
	// ready pod, watched pod by pod.
	_, rev, _ := client.For[*core.Pod](c).List(ctx, "default", client.ListOptions{})
	w, err := client.For[*core.Pod](c).Watch(ctx, "default", client.ListOptions{LabelSelector: "app=agent"}, rev)
	if err != nil {
		t.Fatal(err)
	}
	retryUpdate(t, ctx, dss, "default", "agent", func(d *apps.DaemonSet) { d.Spec.Template.Spec.Containers[0].Image = "kobune.local/labapp:2.0" })
	state := map[string]*core.Pod{}
	for _, p := range activePods(t, ctx, c, "agent") {
		state[p.Name] = p
	}
	for {
		select {
		case ev := <-w.Events:
			if ev.Type == "DELETED" || ev.Object.DeletionTimestamp != nil {
				delete(state, ev.Object.Name)
			} else {
				state[ev.Object.Name] = ev.Object
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the DaemonSet rolling update stalled")
		}
		ready, updated := map[string]bool{}, 0
		for _, p := range state {
			if isReady(p) {
				ready[p.Spec.NodeName] = true
				if p.Spec.Containers[0].Image == "kobune.local/labapp:2.0" {
					updated++
				}
			}
		}
		if len(ready) < 2 {
			t.Fatalf("%d nodes with a ready daemon pod during the update, want at least 2 (maxUnavailable 1)", len(ready))
		}
		if updated == 3 && len(state) == 3 {
			break
		}
	}

	// Cordon node-2 (daemons tolerate it); taint node-3 NoSchedule with a
	// taint they do not tolerate: no new daemon pod goes there, but the
	// running one stays (Kubernetes removes daemon pods for NoExecute
	// taints only), counted as misscheduled.
	nodes := client.For[*core.Node](c)
	for name, change := range map[string]func(*core.Node){
		"node-2": func(n *core.Node) { n.Spec.Unschedulable = true },
		"node-3": func(n *core.Node) {
			n.Spec.Taints = append(n.Spec.Taints, core.Taint{Key: "dedicated", Value: "db", Effect: core.TaintNoSchedule})
		},
	} {
		retryUpdate(t, ctx, nodes, "", name, change)
	}
	var st *apps.DaemonSet
	eventually("status counts node-3's pod as misscheduled", func() bool {
		st, _ = dss.Get(ctx, "default", "agent")
		return st != nil && st.Status.DesiredNumberScheduled == 2 && st.Status.NumberMisscheduled == 1
	})
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if n := perNode("kobune.local/labapp:2.0"); n["node-3"] != 1 {
			t.Fatalf("the daemon pod on node-3 went on a NoSchedule taint (pods per node: %v)", n)
		}
	}
	// A NoExecute taint they do not tolerate removes it.
	retryUpdate(t, ctx, nodes, "", "node-3", func(n *core.Node) {
		n.Spec.Taints = append(n.Spec.Taints, core.Taint{Key: "dedicated", Value: "db", Effect: core.TaintNoExecute})
	})
	eventually("daemon pods on node-1 and the cordoned node-2 only", func() bool {
		n := perNode("kobune.local/labapp:2.0")
		return len(n) == 2 && n["node-1"] == 1 && n["node-2"] == 1
	})
	// The status is written after the pods change: wait for it too.
	eventually("status counts the two eligible nodes", func() bool {
		st, _ = dss.Get(ctx, "default", "agent")
		return st != nil && st.Status.DesiredNumberScheduled == 2 && st.Status.NumberReady == 2 && st.Status.UpdatedNumberScheduled == 2 && st.Status.NumberMisscheduled == 0
	})
}

// retryUpdate reads, changes and writes an object, again after a conflict
// (controllers and agents write the same objects).
func retryUpdate[T meta.Object](t *testing.T, ctx context.Context, typed *client.Typed[T], ns, name string, change func(T)) {
	t.Helper()
	if _, err := typed.Modify(ctx, ns, name, func(o T) error { change(o); return nil }); err != nil {
		t.Fatal(err)
	}
}
