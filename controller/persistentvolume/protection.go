package persistentvolume

import (
	"context"
	"slices"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// ProtectionName is the protection controllers' name in logs.
const ProtectionName = "pv-protection-controller"

// Protection removes the protection finalizers once it is safe: a deleted
// claim's when no pod that has not finished uses it, a deleted volume's
// when it is not bound.
type Protection struct {
	client  *client.Client
	volumes *client.Informer[*core.PersistentVolume]
	claims  *client.Informer[*core.PersistentVolumeClaim]
	pods    *client.Informer[*core.Pod]
	// Loop's keys are "claim/<ns>/<name>" and "volume/<name>".
	Loop *reconcile.Loop
}

// NewProtection returns the controller and registers its handlers.
func NewProtection(c *client.Client, inf *controller.Informers) *Protection {
	p := &Protection{client: c, volumes: inf.Volumes, claims: inf.Claims, pods: inf.Pods}
	p.Loop = reconcile.NewLoop(ProtectionName, p, 2)
	claim := func(c *core.PersistentVolumeClaim) {
		if c.DeletionTimestamp != nil {
			p.Loop.Queue.Add("claim/" + meta.Key(c))
		}
	}
	volume := func(v *core.PersistentVolume) {
		if v.DeletionTimestamp != nil {
			p.Loop.Queue.Add("volume/" + v.Name)
		}
	}
	inf.Claims.AddHandler(client.Handler[*core.PersistentVolumeClaim]{OnAdd: claim, OnUpdate: func(_, c *core.PersistentVolumeClaim) { claim(c) }})
	inf.Volumes.AddHandler(client.Handler[*core.PersistentVolume]{OnAdd: volume, OnUpdate: func(_, v *core.PersistentVolume) { volume(v) }})
	// A pod that finishes or goes may free the claims it used.
	podChanged := func(pod *core.Pod) {
		for _, name := range ClaimsOf(pod) {
			if c, ok := inf.Claims.Get(pod.Namespace, name); ok {
				claim(c)
			}
		}
	}
	inf.Pods.AddHandler(client.Handler[*core.Pod]{OnUpdate: func(_, pod *core.Pod) { podChanged(pod) }, OnDelete: podChanged})
	return p
}

// ClaimsOf are the claims a pod's volumes name.
func ClaimsOf(pod *core.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// Reconcile implements reconcile.Reconciler.
func (p *Protection) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	if name, ok := strings.CutPrefix(key, "volume/"); ok {
		pv, ok := p.volumes.Get("", name)
		if !ok || pv.DeletionTimestamp == nil || !slices.Contains(pv.Finalizers, core.PVProtectionFinalizer) || pv.Status.Phase == core.VolumeBound {
			return reconcile.Result{}, nil
		}
		v := *pv
		v.Finalizers = without(pv.Finalizers, core.PVProtectionFinalizer)
		_, err := client.For[*core.PersistentVolume](p.client).Update(ctx, &v)
		return reconcile.Result{}, ignoreNotFound(err)
	}
	ns, name, _ := strings.Cut(strings.TrimPrefix(key, "claim/"), "/")
	claim, ok := p.claims.Get(ns, name)
	if !ok || claim.DeletionTimestamp == nil || !slices.Contains(claim.Finalizers, core.PVCProtectionFinalizer) {
		return reconcile.Result{}, nil
	}
	if usedBy(p.pods.ByIndex(client.IndexNamespace, ns), name) {
		return reconcile.Result{}, nil // in use: its deletion waits; the pod's end wakes us
	}
	// The cache may not have seen a pod created just before the claim was
	// deleted: before letting the claim go, ask the API server (as
	// Kubernetes' pvc-protection controller does).
	live, _, err := client.For[*core.Pod](p.client).List(ctx, ns, client.ListOptions{})
	if err != nil {
		return reconcile.Result{}, err
	}
	if usedBy(live, name) {
		return reconcile.Result{}, nil
	}
	c := *claim
	c.Finalizers = without(claim.Finalizers, core.PVCProtectionFinalizer)
	_, err = client.For[*core.PersistentVolumeClaim](p.client).Update(ctx, &c)
	return reconcile.Result{}, ignoreNotFound(err)
}

// usedBy: a pod that has not finished names the claim.
func usedBy(pods []*core.Pod, claim string) bool {
	for _, pod := range pods {
		if pod.Status.Phase != core.PodSucceeded && pod.Status.Phase != core.PodFailed && slices.Contains(ClaimsOf(pod), claim) {
			return true
		}
	}
	return false
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func ignoreNotFound(err error) error {
	if client.IsNotFound(err) {
		return nil
	}
	return err
}
