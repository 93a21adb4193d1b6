// Package disruption is kube-controller-manager's disruption controller:
// it keeps each PodDisruptionBudget's status — the pods it expects, how
// many must stay healthy, how many are, and so how many the eviction
// subresource may take now (disruptionsAllowed) — from the pods its
// selector picks and their controllers' replicas.
package disruption

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name of the controller, in logs.
const Name = "disruption-controller"

// DeletionTimeout is how long an evicted pod counts as disrupted (not
// healthy, not yet gone) before the controller stops waiting for it.
const DeletionTimeout = 2 * time.Minute

// Controller keeps budgets' status.
type Controller struct {
	client                 *client.Client
	pdbs                   *client.Informer[*policy.PodDisruptionBudget]
	pods                   *client.Informer[*core.Pod]
	replicaSets            *client.Informer[*apps.ReplicaSet]
	replicationControllers *client.Informer[*core.ReplicationController]
	deployments            *client.Informer[*apps.Deployment]
	sets                   *client.Informer[*apps.StatefulSet]
	recorder               *client.AsyncRecorder
	Loop                   *reconcile.Loop
	now                    func() time.Time
}

// New returns the controller (keys: namespace/name of budgets).
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder) *Controller {
	dc := &Controller{client: c, pdbs: inf.PDBs, pods: inf.Pods, replicaSets: inf.ReplicaSets, replicationControllers: inf.ReplicationControllers, deployments: inf.Deployments, sets: inf.StatefulSets,
		recorder: recorder, now: time.Now}
	dc.Loop = reconcile.NewLoop(Name, dc, 2)
	enqueue := func(b *policy.PodDisruptionBudget) { dc.Loop.Queue.Add(meta.Key(b)) }
	inf.PDBs.AddHandler(client.Handler[*policy.PodDisruptionBudget]{OnAdd: enqueue, OnUpdate: func(_, b *policy.PodDisruptionBudget) { enqueue(b) }})
	podChanged := func(p *core.Pod) {
		for _, b := range dc.pdbs.ByIndex(client.IndexNamespace, p.Namespace) {
			if selects(b, p) {
				enqueue(b)
			}
		}
	}
	inf.Pods.AddHandler(client.Handler[*core.Pod]{OnAdd: podChanged, OnUpdate: func(_, p *core.Pod) { podChanged(p) }, OnDelete: podChanged})
	return dc
}

func selects(b *policy.PodDisruptionBudget, p *core.Pod) bool {
	if b.Spec.Selector == nil {
		return false
	}
	sel, err := selector.FromLabelSelector(b.Spec.Selector)
	return err == nil && sel.Matches(p.Labels)
}

// Reconcile implements reconcile.Reconciler: one budget counted.
func (dc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	cached, ok := dc.pdbs.GetByKey(key)
	if !ok {
		return reconcile.Result{}, nil
	}
	b := *cached
	now := dc.now()
	var pods []*core.Pod
	for _, p := range dc.pods.ByIndex(client.IndexNamespace, b.Namespace) {
		if selects(&b, p) {
			pods = append(pods, p)
		}
	}
	st := policy.PodDisruptionBudgetStatus{ObservedGeneration: b.Generation}
	expected, desired, err := dc.expectations(&b, pods)
	var requeue time.Duration
	if err != nil {
		dc.recorder.Event(&b, core.EventTypeWarning, "CalculateExpectedPodCountFailed", err.Error())
		st.Conditions = condition(cached, meta.ConditionFalse, "SyncFailed", err.Error(), now)
	} else {
		// Pods the eviction subresource let go that are still here.
		disrupted := map[string]meta.Time{}
		for _, p := range pods {
			at, ok := cached.Status.DisruptedPods[p.Name]
			if !ok || p.DeletionTimestamp != nil {
				continue
			}
			if expiry := at.Add(DeletionTimeout); expiry.After(now) {
				disrupted[p.Name] = at
				if requeue == 0 || expiry.Sub(now) < requeue {
					requeue = expiry.Sub(now)
				}
			}
		}
		var healthy int32
		for _, p := range pods {
			if _, gone := disrupted[p.Name]; !gone && p.DeletionTimestamp == nil && ready(p) {
				healthy++
			}
		}
		st.ExpectedPods, st.DesiredHealthy, st.CurrentHealthy = expected, desired, healthy
		if len(disrupted) > 0 {
			st.DisruptedPods = disrupted
		}
		st.DisruptionsAllowed = max(0, healthy-desired)
		if expected <= 0 {
			st.DisruptionsAllowed = 0
		}
		if st.DisruptionsAllowed > 0 {
			st.Conditions = condition(cached, meta.ConditionTrue, "SufficientPods", "", now)
		} else {
			st.Conditions = condition(cached, meta.ConditionFalse, "InsufficientPods", "", now)
		}
	}
	if reflect.DeepEqual(st, cached.Status) {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	b.Status = st
	if _, err := client.For[*policy.PodDisruptionBudget](dc.client).UpdateStatus(ctx, &b); err != nil && !client.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

func condition(b *policy.PodDisruptionBudget, st meta.ConditionStatus, reason, msg string, now time.Time) []policy.Condition {
	c := policy.Condition{Type: policy.DisruptionAllowed, Status: st, Reason: reason, Message: msg, ObservedGeneration: b.Generation, LastTransitionTime: meta.Time{Time: now.UTC().Truncate(time.Second)}}
	for _, old := range b.Status.Conditions {
		if old.Type == policy.DisruptionAllowed && old.Status == st {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	return []policy.Condition{c}
}

func ready(p *core.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == core.PodReady {
			return c.Status == meta.ConditionTrue
		}
	}
	return false
}

// expectations are the pods the budget expects and how many of them
// must stay healthy, as Kubernetes works them out: with an integer
// minAvailable, the pods present and that number; otherwise the
// replicas of the pods' controllers, and the percentage (rounded up) or
// that count less maxUnavailable.
func (dc *Controller) expectations(b *policy.PodDisruptionBudget, pods []*core.Pod) (expected, desired int32, err error) {
	minA, maxU := b.Spec.MinAvailable, b.Spec.MaxUnavailable
	if maxU == nil && minA != nil && !minA.IsString {
		return int32(len(pods)), minA.IntVal, nil
	}
	if maxU == nil && minA == nil {
		return int32(len(pods)), 0, nil
	}
	scales := map[string]int32{}
	for _, p := range pods {
		ref := meta.ControllerOf(p)
		if ref == nil {
			return 0, 0, fmt.Errorf("found no controllers for pod %q", p.Name)
		}
		key, replicas, err := dc.scaleOf(p.Namespace, ref)
		if err != nil {
			return 0, 0, err
		}
		scales[key] = replicas
	}
	for n := range maps.Values(scales) {
		expected += n
	}
	if maxU != nil {
		n, err := maxU.ScaledValue(int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(0, expected-int32(n)), nil
	}
	n, err := minA.ScaledValue(int(expected), true)
	if err != nil {
		return 0, 0, err
	}
	return expected, int32(n), nil
}

// scaleOf is the replicas of a pod's controller: a ReplicaSet's (or its
// Deployment's), a StatefulSet's, a ReplicationController's.
func (dc *Controller) scaleOf(ns string, ref *meta.OwnerReference) (string, int32, error) {
	replicas := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	switch ref.Kind {
	case "ReplicaSet":
		rs, ok := dc.replicaSets.Get(ns, ref.Name)
		if !ok || rs.UID != ref.UID {
			return "", 0, fmt.Errorf("the ReplicaSet %s of a pod is not known yet", ref.Name)
		}
		if dref := meta.ControllerOf(rs); dref != nil && dref.Kind == "Deployment" {
			if d, ok := dc.deployments.Get(ns, dref.Name); ok && d.UID == dref.UID {
				return "Deployment/" + d.Name, replicas(d.Spec.Replicas), nil
			}
		}
		return "ReplicaSet/" + rs.Name, replicas(rs.Spec.Replicas), nil
	case "StatefulSet":
		s, ok := dc.sets.Get(ns, ref.Name)
		if !ok || s.UID != ref.UID {
			return "", 0, fmt.Errorf("the StatefulSet %s of a pod is not known yet", ref.Name)
		}
		return "StatefulSet/" + s.Name, replicas(s.Spec.Replicas), nil
	case "ReplicationController":
		rc, ok := dc.replicationControllers.Get(ns, ref.Name)
		if !ok || rc.UID != ref.UID {
			return "", 0, fmt.Errorf("the ReplicationController %s of a pod is not known yet", ref.Name)
		}
		return "ReplicationController/" + rc.Name, replicas(rc.Spec.Replicas), nil
	}
	return "", 0, fmt.Errorf("pods controlled by a %s have no scale: use an integer minAvailable", ref.Kind)
}
