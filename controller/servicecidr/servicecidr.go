// Package servicecidr is kube-controller-manager's service-cidrs
// controller: every ServiceCIDR gets the finalizer
// networking.k8s.io/service-cidr-finalizer and the condition Ready=True
// (the API server allocates Service IPs from every range not being
// deleted); one being deleted is marked Ready=False, reason Terminating,
// and keeps its finalizer while a Service's cluster IP or an IPAddress in
// it is not also in another range, so no address in use is left outside
// every range.
package servicecidr

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "service-cidrs-controller"

// Kubernetes' reasons and message for the Ready condition.
const (
	reasonReady = "ServiceCIDRReady"
	inUse       = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
)

// Controller keeps ServiceCIDRs' finalizer and Ready condition.
type Controller struct {
	client    *client.Client
	cidrs     *client.Informer[*networking.ServiceCIDR]
	addresses *client.Informer[*networking.IPAddress]
	services  *client.Informer[*core.Service]
	// Loop is the controller's queue (ServiceCIDR names) and worker.
	Loop *reconcile.Loop
}

// New returns the controller and registers its handlers: a ServiceCIDR's
// changes queue it; a Service or IPAddress going away (or changing its
// address) queues the ranges being deleted, which it may have held.
func New(c *client.Client, inf *controller.Informers) *Controller {
	sc := &Controller{client: c, cidrs: inf.ServiceCIDRs, addresses: inf.IPAddresses, services: inf.Services}
	sc.Loop = reconcile.NewLoop(Name, sc, 1)
	enqueue := func(o *networking.ServiceCIDR) { sc.Loop.Queue.Add(o.Name) }
	inf.ServiceCIDRs.AddHandler(client.Handler[*networking.ServiceCIDR]{OnAdd: enqueue,
		OnUpdate: func(_, o *networking.ServiceCIDR) { enqueue(o) }, OnDelete: enqueue})
	terminating := func() {
		for _, o := range inf.ServiceCIDRs.List() {
			if o.DeletionTimestamp != nil {
				enqueue(o)
			}
		}
	}
	inf.Services.AddHandler(client.Handler[*core.Service]{OnUpdate: func(_, _ *core.Service) { terminating() },
		OnDelete: func(*core.Service) { terminating() }})
	inf.IPAddresses.AddHandler(client.Handler[*networking.IPAddress]{OnDelete: func(*networking.IPAddress) { terminating() }})
	return sc
}

// Reconcile implements reconcile.Reconciler for a ServiceCIDR's name.
func (sc *Controller) Reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	o, ok := sc.cidrs.Get("", name)
	if !ok {
		return reconcile.Result{}, nil
	}
	typed := client.For[*networking.ServiceCIDR](sc.client)
	if o.DeletionTimestamp == nil {
		if !slices.Contains(o.Finalizers, networking.ServiceCIDRFinalizer) {
			u := *o
			u.Finalizers = append(slices.Clone(o.Finalizers), networking.ServiceCIDRFinalizer)
			updated, err := typed.Update(ctx, &u)
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("add the finalizer to ServiceCIDR %s: %w", name, err)
			}
			o = updated
		}
		return reconcile.Result{}, sc.setReady(ctx, o, meta.ConditionTrue, reasonReady, "Kubernetes Service CIDR is ready")
	}
	if !slices.Contains(o.Finalizers, networking.ServiceCIDRFinalizer) {
		return reconcile.Result{}, nil
	}
	if sc.orphaned(o) != "" {
		return reconcile.Result{}, sc.setReady(ctx, o, meta.ConditionFalse, networking.ServiceCIDRTerminating, inUse)
	}
	u := *o
	u.Finalizers = slices.DeleteFunc(slices.Clone(o.Finalizers), func(f string) bool { return f == networking.ServiceCIDRFinalizer })
	if _, err := typed.Update(ctx, &u); err != nil && !client.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("remove the finalizer of ServiceCIDR %s: %w", name, err)
	}
	return reconcile.Result{}, nil
}

// orphaned is an address in use in o and in no other range not being
// deleted ("" when there is none).
func (sc *Controller) orphaned(o *networking.ServiceCIDR) string {
	var mine, others []netip.Prefix
	for _, c := range sc.cidrs.List() {
		for _, s := range c.Spec.CIDRs {
			p, err := netip.ParsePrefix(s)
			switch {
			case err != nil:
			case c.Name == o.Name:
				mine = append(mine, p)
			case c.DeletionTimestamp == nil:
				others = append(others, p)
			}
		}
	}
	in := func(ps []netip.Prefix, a netip.Addr) bool {
		return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	var used []string
	for _, s := range sc.services.List() {
		used = append(used, s.Spec.ClusterIPs...)
	}
	for _, a := range sc.addresses.List() {
		used = append(used, a.Name)
	}
	for _, ip := range used {
		a, err := netip.ParseAddr(ip)
		if err == nil && in(mine, a) && !in(others, a) {
			return ip
		}
	}
	return ""
}

// setReady writes the Ready condition when it changes.
func (sc *Controller) setReady(ctx context.Context, o *networking.ServiceCIDR, st meta.ConditionStatus, reason, msg string) error {
	for _, c := range o.Status.Conditions {
		if c.Type == networking.ServiceCIDRReady && c.Status == st && c.Reason == reason {
			return nil
		}
	}
	u := *o
	u.Status.Conditions = slices.DeleteFunc(slices.Clone(o.Status.Conditions), func(c meta.Condition) bool { return c.Type == networking.ServiceCIDRReady })
	u.Status.Conditions = append(u.Status.Conditions, meta.Condition{Type: networking.ServiceCIDRReady, Status: st, Reason: reason, Message: msg,
		LastTransitionTime: meta.Now(), ObservedGeneration: o.Generation})
	if _, err := client.For[*networking.ServiceCIDR](sc.client).UpdateStatus(ctx, &u); err != nil && !client.IsNotFound(err) {
		return fmt.Errorf("write ServiceCIDR %s's Ready condition: %w", o.Name, err)
	}
	return nil
}
