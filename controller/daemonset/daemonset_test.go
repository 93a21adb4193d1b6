package daemonset

import (
	"context"
	"testing"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
	"github.com/kobune/kobune/controller/controllertest"
)

func node(name string, labels map[string]string, taints ...core.Taint) *core.Node {
	n := &core.Node{ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels}}
	n.Spec.Taints = taints
	return n
}

func TestOnePodPerEligibleNode(t *testing.T) {
	ds := &apps.DaemonSet{ObjectMeta: meta.ObjectMeta{Name: "log", Namespace: "kube-system", UID: "ds-uid"},
		Spec: apps.DaemonSetSpec{Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "log"}},
			Spec: core.PodSpec{NodeSelector: map[string]string{"os": "linux"}, Containers: []core.Container{{Name: "c", Image: "i"}}}}}}
	yes := true
	existing := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "log-x", Namespace: "kube-system", UID: "p1", Labels: map[string]string{"app": "log", RevisionLabel: controller.TemplateHash(&ds.Spec.Template)},
		OwnerReferences: []meta.OwnerReference{{Kind: "DaemonSet", Name: "log", UID: "ds-uid", Controller: &yes}}}}
	existing.Spec.NodeName = "b"
	existing.Status.Phase = core.PodRunning
	c, api := controllertest.NewClient()
	inf := controller.NewInformers(c)
	inf.DaemonSets.Seed(ds)
	inf.Nodes.Seed(
		node("a", map[string]string{"os": "linux"}),
		node("b", map[string]string{"os": "linux"}),
		node("c", map[string]string{"os": "windows"}),
		node("d", map[string]string{"os": "linux"}, core.Taint{Key: "gpu", Effect: core.TaintNoSchedule}),
		node("e", map[string]string{"os": "linux"}, core.Taint{Key: "node.kubernetes.io/unreachable", Effect: core.TaintNoExecute}),
	)
	inf.Pods.Seed(existing)
	dc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100))
	if _, err := dc.Reconcile(context.Background(), "kube-system/log"); err != nil {
		t.Fatal(err)
	}
	var pinnedTo []string
	for _, a := range api.Filter("create", "pods") {
		p := controllertest.Decode[core.Pod](a)
		pinnedTo = append(pinnedTo, targetNode(&p))
		if p.Spec.NodeName != "" {
			t.Errorf("daemon pod bound directly; the scheduler should place it")
		}
	}
	// a: selector matches; b: has one; c: wrong os; d: untolerated taint;
	// e: unreachable, which daemons tolerate.
	if len(pinnedTo) != 2 || pinnedTo[0] != "a" || pinnedTo[1] != "e" {
		t.Errorf("pods created for %v, want [a e]", pinnedTo)
	}
	st := controllertest.Decode[apps.DaemonSet](api.Filter("updatestatus", "daemonsets")[0]).Status
	if st.DesiredNumberScheduled != 3 || st.CurrentNumberScheduled != 1 {
		t.Errorf("status %+v, want desired 3 (a, b, e), current 1 (b)", st)
	}
	// Its revision carries the template's hash where its pods do, as
	// Kubernetes' DaemonSet controller labels it.
	revs := api.Filter("create", "controllerrevisions")
	if len(revs) != 1 || controllertest.Decode[apps.ControllerRevision](revs[0]).Labels[RevisionLabel] != controller.TemplateHash(&ds.Spec.Template) {
		t.Errorf("revisions created: %d, want one labelled %s=<the template's hash>", len(revs), RevisionLabel)
	}
}

func TestPinnedKeepsOtherTerms(t *testing.T) {
	a := &core.Affinity{NodeAffinity: &core.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &core.NodeSelector{
		NodeSelectorTerms: []core.NodeSelectorTerm{{MatchExpressions: []core.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"a"}}}}}}}}
	got := pinned(a, "n1")
	term := got.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	if len(term.MatchExpressions) != 1 || len(term.MatchFields) != 1 || term.MatchFields[0].Values[0] != "n1" {
		t.Errorf("term %+v", term)
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields != nil {
		t.Error("the template's affinity was changed in place")
	}
}

// TestRunningDaemonPodStaysOnANewNoScheduleTaint (issue #32): a NoSchedule
// taint the pod does not tolerate — a user's, or the unreachable and
// not-ready NoSchedule taints of a failed node — keeps new daemon pods
// off the node but leaves the running one (it counts as misscheduled, as
// in Kubernetes); only a NoExecute taint it does not tolerate removes it.
func TestRunningDaemonPodStaysOnANewNoScheduleTaint(t *testing.T) {
	tests := []struct {
		name   string
		taint  core.Taint
		remove bool
	}{
		{"user NoSchedule taint", core.Taint{Key: "maintenance", Effect: core.TaintNoSchedule}, false},
		{"failed node: unreachable NoSchedule", core.Taint{Key: "node.kubernetes.io/unreachable", Effect: core.TaintNoSchedule}, false},
		{"failed node: not-ready NoSchedule", core.Taint{Key: "node.kubernetes.io/not-ready", Effect: core.TaintNoSchedule}, false},
		{"failed node: unreachable NoExecute (tolerated)", core.Taint{Key: "node.kubernetes.io/unreachable", Effect: core.TaintNoExecute}, false},
		{"user NoExecute taint", core.Taint{Key: "maintenance", Effect: core.TaintNoExecute}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := &apps.DaemonSet{ObjectMeta: meta.ObjectMeta{Name: "ingress", Namespace: "kube-system", UID: "ds-uid"},
				Spec: apps.DaemonSetSpec{Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: map[string]string{"app": "ingress"}},
					Spec: core.PodSpec{Containers: []core.Container{{Name: "c", Image: "i"}}}}}}
			yes := true
			running := &core.Pod{ObjectMeta: meta.ObjectMeta{Name: "ingress-x", Namespace: "kube-system", UID: "p1", Labels: map[string]string{"app": "ingress", RevisionLabel: controller.TemplateHash(&ds.Spec.Template)},
				OwnerReferences: []meta.OwnerReference{{Kind: "DaemonSet", Name: "ingress", UID: "ds-uid", Controller: &yes}}}}
			running.Spec.NodeName = "n"
			running.Status.Phase = core.PodRunning
			c, api := controllertest.NewClient()
			inf := controller.NewInformers(c)
			inf.DaemonSets.Seed(ds)
			inf.Nodes.Seed(node("n", nil, tt.taint))
			inf.Pods.Seed(running)
			dc := New(c, inf, client.NewAsyncRecorder(&client.Recorder{Client: c, Component: Name}, 100))
			if _, err := dc.Reconcile(context.Background(), "kube-system/ingress"); err != nil {
				t.Fatal(err)
			}
			if removed := len(api.Filter("delete", "pods")) > 0; removed != tt.remove {
				t.Errorf("running daemon pod removed: %v, want %v", removed, tt.remove)
			}
			if n := len(api.Filter("create", "pods")); n != 0 {
				t.Errorf("%d pods created on the tainted node", n)
			}
		})
	}
	hostNet := (&Controller{}).podTemplate(&apps.DaemonSet{Spec: apps.DaemonSetSpec{Template: core.PodTemplateSpec{Spec: core.PodSpec{HostNetwork: true}}}}, "h")
	if !hostNet.ToleratesTaint(&core.Taint{Key: "node.kubernetes.io/network-unavailable", Effect: core.TaintNoSchedule}) {
		t.Error("a hostNetwork daemon pod does not tolerate network-unavailable")
	}
}
