package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
)

// Operator reconciles Websites into Deployments.
type Operator struct {
	c           *client.Client
	websites    *client.Typed[*meta.Unstructured]
	sites       *client.Informer[*meta.Unstructured]
	deployments *client.Informer[*apps.Deployment]
	loop        *reconcile.Loop
}

// New waits (up to wait) for the server to serve the Website kind, then
// sets up the informers and the loop.
func New(ctx context.Context, c *client.Client, wait time.Duration) (*Operator, error) {
	var kind *scheme.Kind
	for deadline := time.Now().Add(wait); ; time.Sleep(time.Second) {
		kinds, err := c.Discover(ctx)
		if err == nil {
			if kind, err = kinds.ByKind("example.com/v1", "Website"); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the server does not serve example.com/v1 Website: %v", err)
		}
	}
	o := &Operator{c: c, websites: client.ForKind[*meta.Unstructured](c, kind)}
	o.sites = client.NewInformer(o.websites, "", client.ListOptions{})
	o.deployments = client.NewInformer(client.For[*apps.Deployment](c), "", client.ListOptions{LabelSelector: managedBy + "=website-operator"})
	o.loop = reconcile.NewLoop("website-operator", o, 2)
	queue := func(ns, name string) { o.loop.Queue.Add(ns + "/" + name) }
	o.sites.AddHandler(client.Handler[*meta.Unstructured]{
		OnAdd:    func(w *meta.Unstructured) { queue(w.Namespace, w.Name) },
		OnUpdate: func(_, w *meta.Unstructured) { queue(w.Namespace, w.Name) },
	})
	// A Deployment it owns changed (its pods became ready): its Website's
	// status may be stale.
	o.deployments.AddHandler(client.Handler[*apps.Deployment]{
		OnUpdate: func(_, d *apps.Deployment) { queue(d.Namespace, d.Name) },
		OnDelete: func(d *apps.Deployment) { queue(d.Namespace, d.Name) },
	})
	return o, nil
}

// managedBy labels what the operator made.
const managedBy = "app.kubernetes.io/managed-by"

// Run runs the informers and the loop until ctx ends.
func (o *Operator) Run(ctx context.Context) {
	go o.sites.Run(ctx)
	go o.deployments.Run(ctx)
	for !o.sites.HasSynced() || !o.deployments.HasSynced() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	o.loop.Run(ctx)
}

// Reconcile makes one Website's Deployment match it and reports its
// readiness. A Website that is gone needs nothing: its Deployment is
// owned by it, and the garbage collector deletes it.
func (o *Operator) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	site, ok := o.sites.GetByKey(key)
	if !ok || site.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	spec, _ := site.Content["spec"].(map[string]any)
	replicas := int32(1)
	if n, ok := number(spec["replicas"]); ok {
		replicas = int32(n)
	}
	want := o.deployment(site, replicas)
	have, exists := o.deployments.Get(site.Namespace, site.Name)
	deployments := client.For[*apps.Deployment](o.c)
	switch {
	case !exists:
		if _, err := deployments.Create(ctx, want); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil // its status comes with the next event
	case *have.Spec.Replicas != replicas:
		d := *have
		d.Spec.Replicas = &replicas
		if _, err := deployments.Update(ctx, &d); err != nil {
			return reconcile.Result{}, err // a conflict: the next pass sees what changed
		}
	}
	ready := int64(have.Status.ReadyReplicas)
	status, _ := site.Status.(map[string]any)
	if n, ok := number(status["readyReplicas"]); ok && n == ready {
		return reconcile.Result{}, nil
	}
	updated := *site
	updated.Status = map[string]any{"readyReplicas": ready}
	_, err := o.websites.UpdateStatus(ctx, &updated)
	return reconcile.Result{}, err
}

// deployment is the Deployment a Website asks for, owned by it.
func (o *Operator) deployment(site *meta.Unstructured, replicas int32) *apps.Deployment {
	labels := map[string]string{"website": site.Name}
	yes := true
	return &apps.Deployment{
		ObjectMeta: meta.ObjectMeta{Name: site.Name, Namespace: site.Namespace, Labels: map[string]string{managedBy: "website-operator"},
			OwnerReferences: []meta.OwnerReference{{APIVersion: site.APIVersion, Kind: site.Kind, Name: site.Name, UID: site.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: apps.DeploymentSpec{Replicas: &replicas, Selector: &meta.LabelSelector{MatchLabels: labels},
			Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: labels},
				Spec: core.PodSpec{Containers: []core.Container{{Name: "web", Image: "kobune.local/labapp:1.0"}}}}},
	}
}

// number reads a JSON number of an unstructured object.
func number(v any) (int64, bool) {
	switch x := v.(type) {
	case interface{ Int64() (int64, error) }:
		n, err := x.Int64()
		return n, err == nil
	case int64:
		return x, true
	}
	return 0, false
}
