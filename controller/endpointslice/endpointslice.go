// Package endpointslice is kube-controller-manager's EndpointSlice
// controller and its legacy Endpoints controller: for every Service with a
// selector it keeps EndpointSlices (discovery.k8s.io/v1) listing the
// matching pods that have an IP — with the conditions ready, serving and
// terminating, the node and zone, the pod as targetRef, and the ports
// resolved on each pod (a named targetPort may be a different number on
// different pods: one group of slices per port set) — at most 100
// endpoints per slice, changing as few slices as it can; and the Service's
// Endpoints object, which older tools read (ready addresses, not-ready
// addresses, no terminating pods unless publishNotReadyAddresses).
package endpointslice

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "endpointslice-controller"

// Controller keeps the EndpointSlices and Endpoints of Services.
type Controller struct {
	client   *client.Client
	services *client.Informer[*core.Service]
	pods     *client.Informer[*core.Pod]
	nodes    *client.Informer[*core.Node]
	slices   *client.Informer[*discovery.EndpointSlice]
	eps      *client.Informer[*core.Endpoints]
	exp      *controller.Expectations
	recorder *client.AsyncRecorder
	// MaxEndpointsPerSlice is 100, as --max-endpoints-per-slice defaults.
	MaxEndpointsPerSlice int
	// Loop is the controller's queue (Service keys) and workers.
	Loop *reconcile.Loop
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder) *Controller {
	ec := &Controller{client: c, services: inf.Services, pods: inf.Pods, nodes: inf.Nodes, slices: inf.EndpointSlices, eps: inf.Endpoints,
		exp: controller.NewExpectations(), recorder: recorder, MaxEndpointsPerSlice: discovery.MaxEndpointsPerSlice}
	ec.Loop = reconcile.NewLoop(Name, ec, 5)
	enqueue := func(s *core.Service) { ec.Loop.Queue.Add(meta.Key(s)) }
	inf.Services.AddHandler(client.Handler[*core.Service]{OnAdd: enqueue, OnUpdate: func(_, s *core.Service) { enqueue(s) },
		OnDelete: func(s *core.Service) { ec.exp.Delete(meta.Key(s)); enqueue(s) }})
	// A pod wakes the Services that select it, before and after a change.
	podChanged := func(p *core.Pod) {
		for _, s := range inf.Services.ByIndex(client.IndexNamespace, p.Namespace) {
			if len(s.Spec.Selector) > 0 && selector.SelectorFromSet(s.Spec.Selector).Matches(p.Labels) {
				enqueue(s)
			}
		}
	}
	inf.Pods.AddHandler(client.Handler[*core.Pod]{OnAdd: podChanged, OnDelete: podChanged,
		OnUpdate: func(old, p *core.Pod) {
			podChanged(p)
			if !maps.Equal(old.Labels, p.Labels) {
				podChanged(old)
			}
		}})
	inf.EndpointSlices.AddHandler(controller.OwnedBy[*discovery.EndpointSlice]{Kind: "Service", Queue: ec.Loop.Queue,
		Owner: controller.CachedIn(inf.Services), Expectations: ec.exp}.Handler())
	// An Endpoints object wakes its Service on every event, its creation
	// included: a sync that found none in the cache and was refused its
	// create (AlreadyExists: an earlier sync's create not seen yet) waits
	// for that Add to sync again. Without it, the Endpoints stayed as the
	// first sync wrote it until something else changed (a flaky test).
	wakeService := func(e *core.Endpoints) { ec.Loop.Queue.Add(meta.Key(e)) }
	inf.Endpoints.AddHandler(client.Handler[*core.Endpoints]{OnAdd: wakeService,
		OnUpdate: func(_, e *core.Endpoints) { wakeService(e) }, OnDelete: wakeService})
	return ec
}

// Reconcile implements reconcile.Reconciler for a Service key.
func (ec *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	svc, ok := ec.services.GetByKey(key)
	if !ok || svc.DeletionTimestamp != nil {
		// Its slices carry owner references: the garbage collector removes
		// them. The Endpoints object has none, as in Kubernetes: it goes here.
		ns, name, _ := strings.Cut(key, "/")
		e, exists := ec.eps.Get(ns, name)
		if !exists || ok || e.Labels[EndpointsManagedBy] != EndpointsController {
			return reconcile.Result{}, nil // someone else's: an Endpoints object written by hand stays
		}
		err := client.For[*core.Endpoints](ec.client).Delete(ctx, ns, name, client.DeleteOptions{UID: e.UID})
		if client.IsNotFound(err) {
			err = nil
		}
		return reconcile.Result{}, err
	}
	if len(svc.Spec.Selector) == 0 {
		return reconcile.Result{}, nil // endpoints managed by someone else (the kubernetes Service: the API server)
	}
	if !ec.exp.Satisfied(key) {
		return reconcile.Result{}, nil // a slice written earlier is not in the cache yet; its event wakes us
	}
	pods := ec.selectedPods(svc)
	if err := ec.syncSlices(ctx, svc, pods); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, ec.syncEndpoints(ctx, svc, pods)
}

// selectedPods are the pods the Service's selector matches that may be
// endpoints: they have an IP and have not finished. Sorted by name.
func (ec *Controller) selectedPods(svc *core.Service) []*core.Pod {
	sel := selector.SelectorFromSet(svc.Spec.Selector)
	var out []*core.Pod
	for _, p := range ec.pods.ByIndex(client.IndexNamespace, svc.Namespace) {
		if p.Status.PodIP == "" || p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed || !sel.Matches(p.Labels) {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// portSet is the Service's ports as resolved on one pod; its key groups
// the pods whose slices may be shared.
type portSet []discovery.EndpointPort

func (ps portSet) key() string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s/%s/%d;", deref(p.Name), deref(p.Protocol), deref(p.Port))
	}
	return b.String()
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// podPorts resolves the Service's ports on pod; a port that does not
// resolve is left out (Kubernetes does the same).
func podPorts(svc *core.Service, pod *core.Pod) portSet {
	var out portSet
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, err := core.FindPort(pod, sp)
		if err != nil {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		out = append(out, discovery.EndpointPort{Name: &name, Protocol: &proto, Port: &n})
	}
	return out
}

// endpointFor is the pod as an endpoint, with Kubernetes' conditions.
func (ec *Controller) endpointFor(svc *core.Service, pod *core.Pod) discovery.Endpoint {
	serving := core.PodIsReady(pod)
	terminating := pod.DeletionTimestamp != nil
	// "ready" is never true while a pod terminates, unless the Service
	// publishes not-ready addresses.
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	e := discovery.Endpoint{Addresses: []string{pod.Status.PodIP},
		Conditions: discovery.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &core.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
	if node := pod.Spec.NodeName; node != "" {
		e.NodeName = &node
		if n, ok := ec.nodes.Get("", node); ok {
			if z, ok := n.Labels[core.LabelTopologyZone]; ok {
				e.Zone = &z
			}
		}
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && svc.Spec.ClusterIP == core.ClusterIPNone {
		h := pod.Spec.Hostname
		e.Hostname = &h
	}
	return e
}

// syncSlices makes the Service's slices list exactly the desired
// endpoints, changing as few slices as it can: endpoints stay in the slice
// they are in (updated if their conditions changed), gone ones are removed,
// new ones fill slices with room before a new slice is made, and a slice
// left empty is deleted — except one placeholder when the Service has no
// endpoints at all, as Kubernetes keeps.
func (ec *Controller) syncSlices(ctx context.Context, svc *core.Service, pods []*core.Pod) error {
	type group struct {
		ports   portSet
		want    map[string]discovery.Endpoint // pod uid → endpoint
		order   []string                      // pod uids by pod name
		have    []*discovery.EndpointSlice
		changed map[*discovery.EndpointSlice]bool
	}
	groups := map[string]*group{}
	var keys []string
	for _, p := range pods {
		ps := podPorts(svc, p)
		k := ps.key()
		g, ok := groups[k]
		if !ok {
			g = &group{ports: ps, want: map[string]discovery.Endpoint{}, changed: map[*discovery.EndpointSlice]bool{}}
			groups[k] = g
			keys = append(keys, k)
		}
		g.want[p.UID] = ec.endpointFor(svc, p)
		g.order = append(g.order, p.UID)
	}
	var stale []*discovery.EndpointSlice
	for _, s := range ec.slices.ByIndex(controller.IndexByOwner, svc.UID) {
		if s.Labels[discovery.LabelManagedBy] != discovery.ManagedByController {
			continue
		}
		g, ok := groups[portSet(s.Ports).key()]
		if !ok {
			stale = append(stale, s)
			continue
		}
		g.have = append(g.have, s)
	}
	var writes, creates []*discovery.EndpointSlice
	for _, k := range keys {
		g := groups[k]
		placed := map[string]bool{}
		var kept []*discovery.EndpointSlice
		for _, s := range g.have {
			cp := *s
			cp.Endpoints = nil
			for _, e := range s.Endpoints {
				uid := ""
				if e.TargetRef != nil {
					uid = e.TargetRef.UID
				}
				want, ok := g.want[uid]
				if !ok || placed[uid] {
					continue // gone (or listed twice): dropped
				}
				placed[uid] = true
				cp.Endpoints = append(cp.Endpoints, want)
			}
			if !equalEndpoints(cp.Endpoints, s.Endpoints) {
				g.changed[&cp] = true
			}
			kept = append(kept, &cp)
		}
		for _, uid := range g.order {
			if placed[uid] {
				continue
			}
			var target *discovery.EndpointSlice
			for _, s := range kept {
				if len(s.Endpoints) < ec.MaxEndpointsPerSlice {
					target = s
					break
				}
			}
			if target == nil {
				target = ec.newSlice(svc, g.ports)
				kept = append(kept, target)
				creates = append(creates, target)
			}
			target.Endpoints = append(target.Endpoints, g.want[uid])
			if target.ResourceVersion != "" {
				g.changed[target] = true
			}
		}
		for _, s := range kept {
			switch {
			case len(s.Endpoints) == 0 && s.ResourceVersion != "":
				stale = append(stale, s)
			case g.changed[s] || !sameLabels(s, svc):
				writes = append(writes, s)
			}
		}
	}
	// No endpoint at all: keep (or make) one empty placeholder slice.
	if len(keys) == 0 {
		var placeholder *discovery.EndpointSlice
		for i, s := range stale {
			if len(s.Ports) == 0 {
				placeholder = s
				stale = slices.Delete(stale, i, i+1)
				break
			}
		}
		if placeholder == nil {
			creates = append(creates, ec.newSlice(svc, nil))
		} else if len(placeholder.Endpoints) > 0 || !sameLabels(placeholder, svc) {
			cp := *placeholder
			cp.Endpoints = nil
			writes = append(writes, &cp)
		}
	}
	return ec.write(ctx, svc, creates, writes, stale)
}

// write sends the changes: updates first, then creates and deletes under
// expectations, so a slice the cache does not show yet is never made twice.
func (ec *Controller) write(ctx context.Context, svc *core.Service, creates, writes, deletes []*discovery.EndpointSlice) error {
	typed := client.For[*discovery.EndpointSlice](ec.client)
	key := meta.Key(svc)
	for _, s := range writes {
		s.Labels = sliceLabels(svc)
		if _, err := typed.Update(ctx, s); err != nil && !client.IsNotFound(err) {
			return err
		}
	}
	ec.exp.Expect(key, len(creates), len(deletes))
	for _, s := range creates {
		if _, err := typed.Create(ctx, s); err != nil {
			for range creates {
				ec.exp.Observed(key, true) // what was not made will not be seen
			}
			for range deletes {
				ec.exp.Observed(key, false)
			}
			return err
		}
	}
	for _, s := range deletes {
		if err := typed.Delete(ctx, s.Namespace, s.Name, client.DeleteOptions{UID: s.UID}); err != nil {
			ec.exp.Observed(key, false)
			if !client.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

func (ec *Controller) newSlice(svc *core.Service, ports portSet) *discovery.EndpointSlice {
	return &discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{GenerateName: generateName(svc.Name), Namespace: svc.Namespace,
		Labels: sliceLabels(svc), OwnerReferences: []meta.OwnerReference{controller.ControllerRef(svc)}},
		AddressType: discovery.AddressTypeIPv4, Ports: ports}
}

// generateName is the Service's name and a dash, shortened so that the
// generated name fits in 63 characters.
func generateName(svc string) string {
	if len(svc) > 57 {
		svc = svc[:57]
	}
	return svc + "-"
}

// sliceLabels are the Service's labels (Kubernetes copies them) and the
// two the slices are found by.
func sliceLabels(svc *core.Service) map[string]string {
	out := maps.Clone(svc.Labels)
	if out == nil {
		out = map[string]string{}
	}
	out[discovery.LabelServiceName] = svc.Name
	out[discovery.LabelManagedBy] = discovery.ManagedByController
	return out
}

func sameLabels(s *discovery.EndpointSlice, svc *core.Service) bool {
	return maps.Equal(s.Labels, sliceLabels(svc))
}

func equalEndpoints(a, b []discovery.Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if fmt.Sprint(a[i].Addresses, deref(a[i].Conditions.Ready), deref(a[i].Conditions.Serving), deref(a[i].Conditions.Terminating),
			deref(a[i].Hostname), deref(a[i].NodeName), deref(a[i].Zone), deref(a[i].TargetRef)) !=
			fmt.Sprint(b[i].Addresses, deref(b[i].Conditions.Ready), deref(b[i].Conditions.Serving), deref(b[i].Conditions.Terminating),
				deref(b[i].Hostname), deref(b[i].NodeName), deref(b[i].Zone), deref(b[i].TargetRef)) {
			return false
		}
	}
	return true
}
