// Package storageversionmigration is kube-controller-manager's
// storage-version-migrator controller: for each StorageVersionMigration it
// rewrites every stored object of the resource it names, each as it is
// read, so that the API server stores it again at the resource's current
// storage version (an object of a custom kind stored at an earlier
// storage version is read converted; writing it back stores it
// converted). Its status says Running, then Succeeded — or Failed, when
// the resource is not served. A migration that succeeded or failed is
// done; a new one starts again.
package storageversionmigration

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/storagemigration"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs (and its role's).
const Name = "storage-version-migrator-controller"

// Controller runs the migrations.
type Controller struct {
	client     *client.Client
	migrations *client.Informer[*storagemigration.StorageVersionMigration]
	Loop       *reconcile.Loop
	now        func() time.Time
}

// New returns the controller.
func New(c *client.Client, inf *controller.Informers) *Controller {
	mc := &Controller{client: c, migrations: inf.StorageVersionMigrations, now: time.Now}
	mc.Loop = reconcile.NewLoop(Name, mc, 1)
	enqueue := func(m *storagemigration.StorageVersionMigration) { mc.Loop.Queue.Add(m.Name) }
	inf.StorageVersionMigrations.AddHandler(client.Handler[*storagemigration.StorageVersionMigration]{OnAdd: enqueue,
		OnUpdate: func(_, m *storagemigration.StorageVersionMigration) { enqueue(m) }})
	return mc
}

func done(m *storagemigration.StorageVersionMigration) bool {
	for _, c := range m.Status.Conditions {
		if (c.Type == storagemigration.Succeeded || c.Type == storagemigration.Failed) && c.Status == meta.ConditionTrue {
			return true
		}
	}
	return false
}

// Reconcile implements reconcile.Reconciler for a migration's name.
func (mc *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	m, ok := mc.migrations.Get("", name)
	if !ok || done(m) {
		return reconcile.Result{}, nil
	}
	kinds, err := mc.client.Discover(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	gr := m.Spec.Resource
	var res *client.Resource
	for _, k := range kinds.All() {
		if k.Group() == gr.Group && k.PluralName() == gr.Resource {
			res = mc.client.Resource(k)
		}
	}
	if res == nil {
		return reconcile.Result{}, mc.finish(ctx, m, storagemigration.Failed, "ResourceNotFound",
			fmt.Sprintf("the API server serves no resource %q in group %q", gr.Resource, gr.Group))
	}
	items, rev, err := res.List(ctx, "", client.ListOptions{})
	if err != nil {
		return reconcile.Result{}, err
	}
	if m, err = mc.setRunning(ctx, m, rev); err != nil {
		return reconcile.Result{}, err
	}
	for _, it := range items {
		var o struct {
			Metadata meta.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(it, &o); err != nil {
			return reconcile.Result{}, err
		}
		// Written back as read: a conflict or a deletion means someone
		// wrote it meanwhile, which stored it at the current version too.
		if _, err := res.Update(ctx, o.Metadata.Namespace, it, client.WriteOptions{}); err != nil && !client.IsConflict(err) && !client.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("rewrite %s/%s: %w", o.Metadata.Namespace, o.Metadata.Name, err)
		}
	}
	return reconcile.Result{}, mc.finish(ctx, m, storagemigration.Succeeded, "MigrationSucceeded",
		fmt.Sprintf("%d objects stored again", len(items)))
}

// setRunning records the revision listed at and the Running condition.
func (mc *Controller) setRunning(ctx context.Context, m *storagemigration.StorageVersionMigration, rev int64) (*storagemigration.StorageVersionMigration, error) {
	updated := *m
	updated.Status.ResourceVersion = fmt.Sprint(rev)
	updated.Status.Conditions = setCondition(m.Status.Conditions, storagemigration.Condition{Type: storagemigration.Running, Status: meta.ConditionTrue,
		Reason: "MigrationRunning", Message: "rewriting every object", LastTransitionTime: meta.Time{Time: mc.now().UTC().Truncate(time.Second)}})
	return client.For[*storagemigration.StorageVersionMigration](mc.client).UpdateStatus(ctx, &updated)
}

// finish records the outcome (and that it no longer runs).
func (mc *Controller) finish(ctx context.Context, m *storagemigration.StorageVersionMigration, typ, reason, msg string) error {
	now := meta.Time{Time: mc.now().UTC().Truncate(time.Second)}
	updated := *m
	conds := setCondition(m.Status.Conditions, storagemigration.Condition{Type: typ, Status: meta.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now})
	for i := range conds {
		if conds[i].Type == storagemigration.Running && conds[i].Status == meta.ConditionTrue {
			conds[i].Status, conds[i].Reason, conds[i].LastTransitionTime = meta.ConditionFalse, reason, now
		}
	}
	updated.Status.Conditions = conds
	_, err := client.For[*storagemigration.StorageVersionMigration](mc.client).UpdateStatus(ctx, &updated)
	return err
}

// setCondition replaces the condition of c's type, or adds it.
func setCondition(conds []storagemigration.Condition, c storagemigration.Condition) []storagemigration.Condition {
	out := append([]storagemigration.Condition(nil), conds...)
	for i := range out {
		if out[i].Type == c.Type {
			if out[i].Status == c.Status {
				c.LastTransitionTime = out[i].LastTransitionTime
			}
			out[i] = c
			return out
		}
	}
	return append(out, c)
}
