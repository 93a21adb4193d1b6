// Package endpointslicemirroring is kube-controller-manager's
// EndpointSliceMirroring controller: the Endpoints object of a Service
// without a selector — written by hand or by another program, the old way
// to point a Service at backends outside the cluster — is mirrored into
// EndpointSlices, which the node proxy and the cluster DNS read. Each
// subset becomes slices of at most 100 endpoints (addresses ready,
// notReadyAddresses not), with the subset's ports, the Endpoints' labels,
// kubernetes.io/service-name and the managed-by value
// endpointslicemirroring-controller.k8s.io, owned by the Endpoints object.
// Endpoints the endpoints controller writes (Services with a selector),
// and those labelled endpointslice.kubernetes.io/skip-mirror=true (the
// API server's own), are not mirrored.
package endpointslicemirroring

import (
	"context"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "endpointslicemirroring-controller"

// Labels and values of mirrored slices, with Kubernetes' names.
const (
	ManagedByMirroring = "endpointslicemirroring-controller.k8s.io"
	LabelSkipMirror    = "endpointslice.kubernetes.io/skip-mirror"
	// endpointsManagedBy is the endpoints controller's label on the
	// Endpoints it writes (those are not mirrored: the endpointslice
	// controller writes their slices from the pods).
	endpointsManagedBy = "endpoints.kubernetes.io/managed-by"
	// maxEndpoints is the most endpoints one mirrored slice holds.
	maxEndpoints = 100
)

// Controller mirrors Endpoints into EndpointSlices.
type Controller struct {
	client    *client.Client
	services  *client.Informer[*core.Service]
	endpoints *client.Informer[*core.Endpoints]
	slices    *client.Informer[*discovery.EndpointSlice]
	// Loop is the controller's queue (Endpoints keys, which are their
	// Service's) and workers.
	Loop *reconcile.Loop
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers) *Controller {
	mc := &Controller{client: c, services: inf.Services, endpoints: inf.Endpoints, slices: inf.EndpointSlices}
	mc.Loop = reconcile.NewLoop(Name, mc, 2)
	enqueue := func(o meta.Object) { mc.Loop.Queue.Add(meta.Key(o)) }
	inf.Endpoints.AddHandler(client.Handler[*core.Endpoints]{OnAdd: func(e *core.Endpoints) { enqueue(e) },
		OnUpdate: func(_, e *core.Endpoints) { enqueue(e) }, OnDelete: func(e *core.Endpoints) { enqueue(e) }})
	inf.Services.AddHandler(client.Handler[*core.Service]{OnAdd: func(s *core.Service) { enqueue(s) },
		OnUpdate: func(_, s *core.Service) { enqueue(s) }, OnDelete: func(s *core.Service) { enqueue(s) }})
	sliceChanged := func(s *discovery.EndpointSlice) {
		if s.Labels[discovery.LabelManagedBy] == ManagedByMirroring && s.Labels[discovery.LabelServiceName] != "" {
			mc.Loop.Queue.Add(s.Namespace + "/" + s.Labels[discovery.LabelServiceName])
		}
	}
	inf.EndpointSlices.AddHandler(client.Handler[*discovery.EndpointSlice]{OnAdd: sliceChanged,
		OnUpdate: func(_, s *discovery.EndpointSlice) { sliceChanged(s) }, OnDelete: sliceChanged})
	return mc
}

// Reconcile implements reconcile.Reconciler for an Endpoints key.
func (mc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name, _ := strings.Cut(key, "/")
	var have []*discovery.EndpointSlice
	for _, s := range mc.slices.ByIndex(client.IndexNamespace, ns) {
		if s.Labels[discovery.LabelManagedBy] == ManagedByMirroring && s.Labels[discovery.LabelServiceName] == name {
			have = append(have, s)
		}
	}
	sort.Slice(have, func(i, j int) bool { return have[i].Name < have[j].Name })
	var want []*discovery.EndpointSlice
	if e, svc, ok := mc.mirrored(ns, name); ok {
		want = desired(e, svc)
	}
	typed := client.For[*discovery.EndpointSlice](mc.client)
	for i, w := range want {
		if i < len(have) {
			cur := have[i]
			if reflect.DeepEqual(cur.Endpoints, w.Endpoints) && reflect.DeepEqual(cur.Ports, w.Ports) && maps.Equal(cur.Labels, w.Labels) {
				continue
			}
			updated := *cur
			updated.Endpoints, updated.Ports, updated.Labels, updated.OwnerReferences = w.Endpoints, w.Ports, w.Labels, w.OwnerReferences
			if _, err := typed.Update(ctx, &updated); err != nil && !client.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("update EndpointSlice %s: %w", cur.Name, err)
			}
			continue
		}
		if _, err := typed.Create(ctx, w); err != nil {
			return reconcile.Result{}, fmt.Errorf("create an EndpointSlice for Endpoints %s: %w", key, err)
		}
	}
	for _, extra := range have[min(len(want), len(have)):] {
		if err := typed.Delete(ctx, ns, extra.Name, client.DeleteOptions{UID: extra.UID}); err != nil && !client.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("delete EndpointSlice %s: %w", extra.Name, err)
		}
	}
	return reconcile.Result{}, nil
}

// mirrored is the Endpoints object and its Service when it is to be
// mirrored: both exist, the Service has no selector, and the Endpoints are
// neither the endpoints controller's nor marked skip-mirror.
func (mc *Controller) mirrored(ns, name string) (*core.Endpoints, *core.Service, bool) {
	e, ok := mc.endpoints.Get(ns, name)
	if !ok || e.DeletionTimestamp != nil || e.Labels[endpointsManagedBy] != "" || e.Labels[LabelSkipMirror] == "true" {
		return nil, nil, false
	}
	svc, ok := mc.services.Get(ns, name)
	if !ok || len(svc.Spec.Selector) > 0 || svc.Spec.Type == core.ServiceTypeExternalName {
		return nil, nil, false
	}
	return e, svc, true
}

// desired are the slices that mirror e: each subset's IPv4 addresses, at
// most maxEndpoints a slice, with the subset's ports.
func desired(e *core.Endpoints, svc *core.Service) []*discovery.EndpointSlice {
	labels := maps.Clone(e.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[discovery.LabelServiceName], labels[discovery.LabelManagedBy] = svc.Name, ManagedByMirroring
	yes := true
	owner := meta.OwnerReference{APIVersion: "v1", Kind: "Endpoints", Name: e.Name, UID: e.UID, Controller: &yes, BlockOwnerDeletion: &yes}
	var out []*discovery.EndpointSlice
	for _, sub := range e.Subsets {
		var eps []discovery.Endpoint
		add := func(addrs []core.EndpointAddress, ready bool) {
			for _, a := range addrs {
				if ip := net.ParseIP(a.IP); ip == nil || ip.To4() == nil {
					continue // Kobune's clusters are IPv4 single-stack
				}
				ep := discovery.Endpoint{Addresses: []string{a.IP}, Conditions: discovery.EndpointConditions{Ready: ptr(ready)}, TargetRef: a.TargetRef, NodeName: a.NodeName}
				if a.Hostname != "" {
					ep.Hostname = ptr(a.Hostname)
				}
				eps = append(eps, ep)
			}
		}
		add(sub.Addresses, true)
		add(sub.NotReadyAddresses, false)
		var ports []discovery.EndpointPort
		for _, p := range sub.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = core.ProtocolTCP
			}
			ports = append(ports, discovery.EndpointPort{Name: ptr(p.Name), Protocol: ptr(proto), Port: ptr(p.Port)})
		}
		for start := 0; start < len(eps); start += maxEndpoints {
			out = append(out, &discovery.EndpointSlice{
				ObjectMeta: meta.ObjectMeta{GenerateName: svc.Name + "-", Namespace: e.Namespace, Labels: maps.Clone(labels),
					OwnerReferences: []meta.OwnerReference{owner}},
				AddressType: discovery.AddressTypeIPv4, Endpoints: slices.Clone(eps[start:min(start+maxEndpoints, len(eps))]), Ports: ports})
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }
