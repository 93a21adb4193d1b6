package endpointslice

import (
	"context"
	"maps"
	"reflect"
	"sort"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// The legacy Endpoints object (kube-controller-manager's endpoints
// controller): one per Service with a selector, named after it. Pods that
// are terminating are left out unless the Service publishes not-ready
// addresses; ready pods are addresses, the others notReadyAddresses; pods
// sharing the same resolved ports share a subset. Kubernetes truncates at
// 1000 addresses, with the annotation below.

// overCapacity is the annotation of a truncated Endpoints object.
const overCapacity = "endpoints.kubernetes.io/over-capacity"

const maxEndpointsAddresses = 1000

// EndpointsManagedBy and EndpointsController label the Endpoints objects
// this controller writes, as Kubernetes' endpoints controller labels its
// own: an Endpoints object someone else wrote (for a Service without a
// selector, or with no Service at all) is neither changed nor deleted.
const (
	EndpointsManagedBy  = "endpoints.kubernetes.io/managed-by"
	EndpointsController = "endpoint-controller"
)

func (ec *Controller) syncEndpoints(ctx context.Context, svc *core.Service, pods []*core.Pod) error {
	type subset struct {
		ports           []core.EndpointPort
		ready, notReady []core.EndpointAddress
	}
	var order []string
	subsets := map[string]*subset{}
	total := 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil && !svc.Spec.PublishNotReadyAddresses {
			continue
		}
		ps := podPorts(svc, p)
		if len(ps) == 0 && len(svc.Spec.Ports) > 0 {
			continue
		}
		k := ps.key()
		sub, ok := subsets[k]
		if !ok {
			sub = &subset{}
			for _, port := range ps {
				sub.ports = append(sub.ports, core.EndpointPort{Name: deref(port.Name), Port: deref(port.Port), Protocol: deref(port.Protocol)})
			}
			subsets[k] = sub
			order = append(order, k)
		}
		if total == maxEndpointsAddresses {
			continue
		}
		total++
		node := p.Spec.NodeName
		addr := core.EndpointAddress{IP: p.Status.PodIP, TargetRef: &core.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
		if node != "" {
			addr.NodeName = &node
		}
		if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name && svc.Spec.ClusterIP == core.ClusterIPNone {
			addr.Hostname = p.Spec.Hostname
		}
		if svc.Spec.PublishNotReadyAddresses || (core.PodIsReady(p) && p.DeletionTimestamp == nil) {
			sub.ready = append(sub.ready, addr)
		} else {
			sub.notReady = append(sub.notReady, addr)
		}
	}
	sort.Strings(order)
	// The Service's labels, and the mark that this controller manages
	// the object (only such Endpoints go with their Service).
	labels := maps.Clone(svc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[EndpointsManagedBy] = EndpointsController
	want := &core.Endpoints{ObjectMeta: meta.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: labels}}
	for _, k := range order {
		sub := subsets[k]
		want.Subsets = append(want.Subsets, core.EndpointSubset{Addresses: sub.ready, NotReadyAddresses: sub.notReady, Ports: sub.ports})
	}
	if total == maxEndpointsAddresses {
		want.Annotations = map[string]string{overCapacity: "truncated"}
	}
	typed := client.For[*core.Endpoints](ec.client)
	cur, ok := ec.eps.Get(svc.Namespace, svc.Name)
	if !ok {
		_, err := typed.Create(ctx, want)
		if client.IsAlreadyExists(err) {
			return nil // the cache is behind; its event wakes us
		}
		return err
	}
	if reflect.DeepEqual(cur.Subsets, want.Subsets) && maps.Equal(cur.Labels, want.Labels) && cur.Annotations[overCapacity] == want.Annotations[overCapacity] {
		return nil
	}
	updated := *cur
	updated.Subsets, updated.Labels = want.Subsets, want.Labels
	updated.Annotations = maps.Clone(cur.Annotations)
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	if want.Annotations[overCapacity] != "" {
		updated.Annotations[overCapacity] = "truncated"
	} else {
		delete(updated.Annotations, overCapacity)
	}
	_, err := typed.Update(ctx, &updated)
	return err
}
