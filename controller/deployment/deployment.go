// Package deployment is the Deployment controller of kube-controller-manager.
// A Deployment owns ReplicaSets, one per distinct pod template: the "new"
// ReplicaSet runs the current template, the "old" ones earlier templates.
// A rollout moves replicas from old to new — all at once (Recreate: old
// ones to zero first) or step by step within maxSurge and maxUnavailable
// (RollingUpdate), gated on the new pods' availability. Each ReplicaSet
// carries its revision (deployment.kubernetes.io/revision); a rollback
// (`kobectl rollout undo`) puts an old template back into the Deployment,
// which makes that ReplicaSet the new one again, with the next revision.
//
// Files: deployment.go (handlers, reconcile, owning ReplicaSets),
// rollout.go (RollingUpdate and Recreate arithmetic), replicasets.go
// (template hash, new ReplicaSet, revisions, history clean-up),
// status.go (status and the Progressing and Available conditions).
package deployment

import (
	"context"
	"fmt"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "deployment-controller"

// Controller reconciles Deployments.
type Controller struct {
	client   *client.Client
	deploys  *client.Informer[*apps.Deployment]
	rss      *client.Informer[*apps.ReplicaSet]
	pods     *client.Informer[*core.Pod]
	recorder *client.AsyncRecorder
	// writes fence each pass from the ReplicaSets the last one wrote
	// and the cache does not show yet.
	writes *controller.Writes
	now    func() time.Time
	// Loop is the controller's queue and workers.
	Loop *reconcile.Loop
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder) *Controller {
	dc := &Controller{client: c, deploys: inf.Deployments, rss: inf.ReplicaSets, pods: inf.Pods, recorder: recorder, writes: controller.NewWrites(controller.CachedIn(inf.ReplicaSets)), now: time.Now}
	dc.Loop = reconcile.NewLoop(Name, dc, 5)
	enqueue := func(d *apps.Deployment) { dc.Loop.Queue.Add(meta.Key(d)) }
	inf.Deployments.AddHandler(client.Handler[*apps.Deployment]{OnAdd: enqueue, OnUpdate: func(_, d *apps.Deployment) { enqueue(d) }, OnDelete: enqueue})
	owned := controller.OwnedBy[*apps.ReplicaSet]{Kind: "Deployment", Queue: dc.Loop.Queue, Owner: controller.CachedIn(inf.Deployments), Writes: dc.writes,
		Adopters: controller.SelectedBy[*apps.Deployment, *apps.ReplicaSet](inf.Deployments, func(d *apps.Deployment) *meta.LabelSelector { return d.Spec.Selector })}
	inf.ReplicaSets.AddHandler(owned.Handler())
	// Recreate waits for old pods to be gone: their deletion matters.
	inf.Pods.AddHandler(client.Handler[*core.Pod]{OnDelete: func(p *core.Pod) {
		if ref := meta.ControllerOf(p); ref != nil && ref.Kind == "ReplicaSet" {
			if rs, ok := inf.ReplicaSets.Get(p.Namespace, ref.Name); ok {
				owned.Enqueue(rs)
			}
		}
	}})
	return dc
}

// Reconcile implements reconcile.Reconciler.
func (dc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	d, ok := dc.deploys.GetByKey(key)
	if !ok || d.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // the garbage collector removes what it owned
	}
	if dc.writes.Pending(key) {
		// The cache does not show this Deployment's last ReplicaSet
		// writes yet: counting from it could surge too far. Their
		// events requeue the Deployment (the timer is a safety net).
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	sel, err := selector.FromLabelSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return reconcile.Result{}, reconcile.Terminal(fmt.Errorf("selector %v: a Deployment needs a non-empty selector", d.Spec.Selector))
	}
	rsList, err := dc.claimReplicaSets(ctx, d, sel)
	if err != nil {
		return reconcile.Result{}, err
	}
	r := &rollout{dc: dc, d: d, all: rsList}
	r.split()
	if d.Spec.Paused {
		if err := r.syncPaused(ctx); err != nil {
			return reconcile.Result{}, err
		}
		return dc.syncStatus(ctx, r)
	}
	if r.isScalingEvent() {
		// Only scaled this time (scale.go); the rollout goes on in the
		// next pass, from the new sizes.
		scaled, err := r.scaleForEvent(ctx)
		if err != nil {
			return reconcile.Result{}, err
		}
		if scaled {
			return dc.syncStatus(ctx, r)
		}
	}
	if err := r.ensureNew(ctx); err != nil {
		return reconcile.Result{}, err
	}
	if d.Spec.Strategy.Type == apps.RecreateDeploymentStrategyType {
		err = r.recreate(ctx)
	} else {
		err = r.rollingUpdate(ctx)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.cleanupHistory(ctx); err != nil {
		return reconcile.Result{}, err
	}
	return dc.syncStatus(ctx, r)
}

// claimReplicaSets returns the ReplicaSets the Deployment controls,
// adopting matching orphans and releasing ones that no longer match.
func (dc *Controller) claimReplicaSets(ctx context.Context, d *apps.Deployment, sel selector.Selector) ([]*apps.ReplicaSet, error) {
	return controller.Claim(ctx, dc.client, d, sel, dc.rss.ByIndex(client.IndexNamespace, d.Namespace), nil)
}

// oldPodsExist reports whether any pod of the old ReplicaSets is still
// there, running or terminating (Recreate waits until none is).
func (dc *Controller) oldPodsExist(old []*apps.ReplicaSet) bool {
	for _, rs := range old {
		for _, p := range dc.pods.ByIndex(controller.IndexByOwner, rs.UID) {
			if p.Status.Phase != core.PodSucceeded && p.Status.Phase != core.PodFailed {
				return true
			}
		}
	}
	return false
}
