// Package daemonset is kube-controller-manager's DaemonSet controller: one
// pod per eligible node. A node is eligible when it passes the template's
// nodeSelector and required node affinity and every NoSchedule/NoExecute
// taint is tolerated — by the template, or by the tolerations every daemon
// pod gets (not-ready, unreachable, unschedulable, and the pressure
// taints), so daemons keep running on sick and cordoned nodes, as in
// Kubernetes. The pods are placed by the scheduler, pinned to their node
// with a required node affinity on metadata.name (what Kubernetes does
// since 1.12). A changed template rolls out node by node, at most
// maxUnavailable at a time (RollingUpdate), or only as pods are deleted
// (OnDelete); pods carry the template's hash in controller-revision-hash.
// Each template the DaemonSet has had is kept as a ControllerRevision
// <name>-<hash> (controller.History), up to revisionHistoryLimit besides
// those its pods still run: what kubectl rollout history and undo use.
package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "daemonset-controller"

// RevisionLabel carries the template hash on daemon pods.
const RevisionLabel = "controller-revision-hash"

// Controller reconciles DaemonSets.
type Controller struct {
	client   *client.Client
	dss      *client.Informer[*apps.DaemonSet]
	nodes    *client.Informer[*core.Node]
	pods     *client.Informer[*core.Pod]
	exp      *controller.Expectations
	history  controller.History
	recorder *client.AsyncRecorder
	now      func() time.Time
	// Loop is the controller's queue and workers.
	Loop *reconcile.Loop
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder) *Controller {
	dc := &Controller{client: c, dss: inf.DaemonSets, nodes: inf.Nodes, pods: inf.Pods, exp: controller.NewExpectations(), recorder: recorder, now: time.Now,
		history: controller.History{Client: c, Revisions: inf.Revisions, Label: RevisionLabel}}
	dc.Loop = reconcile.NewLoop(Name, dc, 3)
	enqueue := func(ds *apps.DaemonSet) { dc.Loop.Queue.Add(meta.Key(ds)) }
	inf.DaemonSets.AddHandler(client.Handler[*apps.DaemonSet]{OnAdd: enqueue, OnUpdate: func(_, ds *apps.DaemonSet) { enqueue(ds) },
		OnDelete: func(ds *apps.DaemonSet) { dc.exp.Delete(meta.Key(ds)) }})
	all := func() {
		for _, ds := range inf.DaemonSets.List() {
			enqueue(ds)
		}
	}
	inf.Nodes.AddHandler(client.Handler[*core.Node]{OnAdd: func(*core.Node) { all() },
		OnUpdate: func(old, n *core.Node) {
			if !maps.Equal(old.Labels, n.Labels) || len(old.Spec.Taints) != len(n.Spec.Taints) || !sameTaints(old, n) {
				all()
			}
		}, OnDelete: func(*core.Node) { all() }})
	inf.Pods.AddHandler(controller.OwnedBy[*core.Pod]{Kind: "DaemonSet", Queue: dc.Loop.Queue, Owner: controller.CachedIn(inf.DaemonSets),
		Expectations: dc.exp}.Handler())
	return dc
}

func sameTaints(a, b *core.Node) bool {
	for i := range a.Spec.Taints {
		if a.Spec.Taints[i].Key != b.Spec.Taints[i].Key || a.Spec.Taints[i].Effect != b.Spec.Taints[i].Effect || a.Spec.Taints[i].Value != b.Spec.Taints[i].Value {
			return false
		}
	}
	return true
}

// daemonTolerations are added to every daemon pod, as Kubernetes does:
// a daemon pod stays on a node that is not ready or unreachable (a node
// failure evicts everything else), and is placed on nodes under pressure
// and on cordoned ones. A pod on the host's network also tolerates a node
// whose pod network is not up yet (it does not need it).
var daemonTolerations = []core.Toleration{
	{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: core.TaintNoExecute},
	{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: core.TaintNoExecute},
	{Key: "node.kubernetes.io/disk-pressure", Operator: "Exists", Effect: core.TaintNoSchedule},
	{Key: "node.kubernetes.io/memory-pressure", Operator: "Exists", Effect: core.TaintNoSchedule},
	{Key: "node.kubernetes.io/pid-pressure", Operator: "Exists", Effect: core.TaintNoSchedule},
	{Key: "node.kubernetes.io/unschedulable", Operator: "Exists", Effect: core.TaintNoSchedule},
}

var hostNetworkToleration = core.Toleration{Key: "node.kubernetes.io/network-unavailable", Operator: "Exists", Effect: core.TaintNoSchedule}

// Reconcile implements reconcile.Reconciler.
func (dc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ds, ok := dc.dss.GetByKey(key)
	if !ok || ds.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	satisfied := dc.exp.Satisfied(key) // before the pods are read (see the ReplicaSet controller)
	hash := controller.TemplateHash(&ds.Spec.Template)
	proto := dc.podTemplate(ds, hash)
	byNode := map[string][]*core.Pod{}
	for _, p := range dc.pods.ByIndex(controller.IndexByOwner, ds.UID) {
		if ref := meta.ControllerOf(p); ref != nil && ref.UID == ds.UID {
			byNode[targetNode(p)] = append(byNode[targetNode(p)], p)
		}
	}
	running := map[string]bool{} // revisions the pods run
	for _, ps := range byNode {
		for _, p := range ps {
			running[controller.RevisionName(ds.Name, p.Labels[RevisionLabel])] = true
		}
	}
	if _, err := dc.history.Sync(ctx, ds, &ds.Spec.Template, hash, ds.Spec.RevisionHistoryLimit, running); err != nil {
		return reconcile.Result{}, err
	}
	nodes := dc.nodes.List()
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var create []string
	var remove []*core.Pod
	st := apps.DaemonSetStatus{ObservedGeneration: ds.Generation}
	eligible := map[string]bool{}
	for _, n := range nodes {
		ok, keep := fits(proto, n)
		eligible[n.Name] = ok
		var live []*core.Pod
		for _, p := range byNode[n.Name] {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == core.PodFailed: // replace a failed daemon pod
				remove = append(remove, p)
			default:
				live = append(live, p)
			}
		}
		if !ok {
			if len(live) > 0 {
				st.NumberMisscheduled++
			}
			if !keep {
				remove = append(remove, live...)
			}
			continue
		}
		st.DesiredNumberScheduled++
		switch {
		case len(live) == 0:
			create = append(create, n.Name)
		default:
			st.CurrentNumberScheduled++
			remove = append(remove, live[1:]...) // one per node
		}
	}
	for node, pods := range byNode { // pods for nodes that are gone
		if _, known := eligible[node]; !known {
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					remove = append(remove, p)
				}
			}
		}
	}
	var requeue time.Duration
	if satisfied {
		remove = append(remove, dc.rollingVictims(ds, byNode, eligible, hash)...)
		dc.exp.Expect(key, len(create), len(remove))
		for i, node := range create {
			if err := dc.createPod(ctx, ds, proto, node); err != nil {
				for range len(create) - i {
					dc.exp.Observed(key, true)
				}
				return reconcile.Result{}, err
			}
		}
		for _, p := range remove {
			if err := client.For[*core.Pod](dc.client).Delete(ctx, p.Namespace, p.Name, client.DeleteOptions{UID: p.UID}); err != nil && !client.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("delete pod %s: %w", p.Name, err)
			}
			dc.recorder.Event(ds, core.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
		}
	}
	requeue = dc.countStatus(ds, byNode, eligible, hash, &st)
	return reconcile.Result{RequeueAfter: requeue}, dc.writeStatus(ctx, ds, st)
}

// rollingVictims picks old-template pods to replace: under RollingUpdate
// as many as maxUnavailable allows, counting pods already unavailable.
func (dc *Controller) rollingVictims(ds *apps.DaemonSet, byNode map[string][]*core.Pod, eligible map[string]bool, hash string) []*core.Pod {
	u := ds.Spec.UpdateStrategy
	if u.Type == "OnDelete" {
		return nil
	}
	maxUnavailable := 1
	if u.RollingUpdate != nil && u.RollingUpdate.MaxUnavailable != nil {
		desired := 0
		for _, ok := range eligible {
			if ok {
				desired++
			}
		}
		if v, err := u.RollingUpdate.MaxUnavailable.ScaledValue(desired, true); err == nil {
			maxUnavailable = max(v, 1)
		}
	}
	unavailable := 0
	var old []*core.Pod
	// Every eligible node counts, also one with no pod at all (its old pod
	// already gone, the replacement not made yet): it is unavailable too.
	nodes := make([]string, 0, len(eligible))
	for n, ok := range eligible {
		if ok {
			nodes = append(nodes, n)
		}
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		live := activePod(byNode[n])
		switch {
		case live == nil:
			unavailable++ // being replaced, or not yet made
		case live.Labels[RevisionLabel] != hash:
			if ok, _ := controller.IsAvailable(live, ds.Spec.MinReadySeconds, dc.now()); !ok {
				unavailable++
				old = append([]*core.Pod{live}, old...) // unavailable old pods go first: free to replace
			} else {
				old = append(old, live)
			}
		default:
			if ok, _ := controller.IsAvailable(live, ds.Spec.MinReadySeconds, dc.now()); !ok {
				unavailable++
			}
		}
	}
	budget := maxUnavailable - unavailable
	var out []*core.Pod
	for _, p := range old {
		if ok, _ := controller.IsAvailable(p, ds.Spec.MinReadySeconds, dc.now()); !ok {
			out = append(out, p) // already unavailable: costs nothing
			continue
		}
		if budget > 0 {
			out = append(out, p)
			budget--
		}
	}
	return out
}

func activePod(pods []*core.Pod) *core.Pod {
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != core.PodFailed {
			return p
		}
	}
	return nil
}

// countStatus fills the ready, available and updated counts.
func (dc *Controller) countStatus(ds *apps.DaemonSet, byNode map[string][]*core.Pod, eligible map[string]bool, hash string, st *apps.DaemonSetStatus) time.Duration {
	var requeue time.Duration
	for n, ok := range eligible {
		p := activePod(byNode[n])
		if !ok || p == nil {
			continue
		}
		if p.Labels[RevisionLabel] == hash {
			st.UpdatedNumberScheduled++
		}
		if controller.IsReady(p) {
			st.NumberReady++
		}
		if avail, wait := controller.IsAvailable(p, ds.Spec.MinReadySeconds, dc.now()); avail {
			st.NumberAvailable++
		} else if wait > 0 && (requeue == 0 || wait < requeue) {
			requeue = wait
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return requeue
}

// podTemplate is the pod the DaemonSet makes, before pinning to a node.
func (dc *Controller) podTemplate(ds *apps.DaemonSet, hash string) *core.Pod {
	t := ds.Spec.Template
	t.Labels = maps.Clone(t.Labels)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[RevisionLabel] = hash
	p := controller.PodFromTemplate(&t, ds.Namespace, ds.Name+"-", ds)
	p.Spec.Tolerations = append(append([]core.Toleration(nil), p.Spec.Tolerations...), daemonTolerations...)
	if p.Spec.HostNetwork {
		p.Spec.Tolerations = append(p.Spec.Tolerations, hostNetworkToleration)
	}
	return p
}

// fits reports whether a daemon pod belongs on the node (node selector and
// affinity, and taints; scheduling resources are the scheduler's
// business), and whether a daemon pod already there keeps running, as
// Kubernetes' NodeShouldRunDaemonPod: a taint the pod does not tolerate
// stops new pods, but only a NoExecute one removes a running pod (a
// user's NoSchedule taint, or the unreachable:NoSchedule taint of a
// failed node, leaves it where it is).
func fits(p *core.Pod, n *core.Node) (shouldRun, keepRunning bool) {
	if !core.PodMatchesNodeSelectorAndAffinity(p, n) {
		return false, false
	}
	if core.UntoleratedTaint(p, n) == nil {
		return true, true
	}
	for i := range n.Spec.Taints {
		if t := &n.Spec.Taints[i]; t.Effect == core.TaintNoExecute && !p.ToleratesTaint(t) {
			return false, false
		}
	}
	return false, true
}

// createPod makes the daemon pod for a node, pinned there by a required
// node affinity on the node's name.
func (dc *Controller) createPod(ctx context.Context, ds *apps.DaemonSet, proto *core.Pod, node string) error {
	p := *proto
	p.Spec.Affinity = pinned(proto.Spec.Affinity, node)
	created, err := client.For[*core.Pod](dc.client).Create(ctx, &p)
	if err != nil {
		dc.recorder.Event(ds, core.EventTypeWarning, "FailedCreate", "Error creating: "+client.Message(err))
		return fmt.Errorf("create pod for node %s: %w", node, err)
	}
	dc.recorder.Event(ds, core.EventTypeNormal, "SuccessfulCreate", fmt.Sprintf("Created pod: %s", created.Name))
	return nil
}

// pinned adds metadata.name=node to every required node selector term (or
// makes the one term), as Kubernetes' daemon controller does.
func pinned(a *core.Affinity, node string) *core.Affinity {
	out := &core.Affinity{}
	if a != nil {
		b, _ := json.Marshal(a)
		_ = json.Unmarshal(b, out) // a deep copy
	}
	field := core.NodeSelectorRequirement{Key: "metadata.name", Operator: "In", Values: []string{node}}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &core.NodeAffinity{}
	}
	req := out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &core.NodeSelector{NodeSelectorTerms: []core.NodeSelectorTerm{{MatchFields: []core.NodeSelectorRequirement{field}}}}
		return out
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchFields = []core.NodeSelectorRequirement{field}
	}
	return out
}

// targetNode is the node a daemon pod is for: where it is bound, else the
// node its affinity pins it to.
func targetNode(p *core.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range t.MatchFields {
				if f.Key == "metadata.name" && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

func (dc *Controller) writeStatus(ctx context.Context, ds *apps.DaemonSet, st apps.DaemonSetStatus) error {
	st.Conditions = ds.Status.Conditions
	o := ds.Status
	if o.CurrentNumberScheduled == st.CurrentNumberScheduled && o.NumberMisscheduled == st.NumberMisscheduled && o.DesiredNumberScheduled == st.DesiredNumberScheduled &&
		o.NumberReady == st.NumberReady && o.ObservedGeneration == st.ObservedGeneration && o.UpdatedNumberScheduled == st.UpdatedNumberScheduled &&
		o.NumberAvailable == st.NumberAvailable && o.NumberUnavailable == st.NumberUnavailable {
		return nil
	}
	updated := *ds
	updated.Status = st
	_, err := controller.WriteStatus(ctx, dc.client, &updated)
	return err
}
