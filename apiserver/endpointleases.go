package apiserver

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kobune/kobune/api/coordination"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/storage"
)

// The kubernetes Service's endpoints are the API servers that are alive,
// as kube-apiserver's lease endpoint reconciler keeps them: every API
// server holds a Lease in kube-system naming its advertised address and
// renews it every EndpointReconcileInterval; each then writes the
// Endpoints and EndpointSlice from the Leases not expired. A server that
// restarts on another address or port replaces its entry at once; one
// that stops is dropped when its Lease expires (at once when it stops
// cleanly); several API servers on one etcd all appear.
const (
	// endpointLeaseLabel marks the API servers' Leases (Kubernetes'
	// identity label, apiserver.kubernetes.io/identity).
	endpointLeaseLabel = "apiserver.kubernetes.io/identity"
	// endpointAnnotation holds the address:port a Lease advertises.
	endpointAnnotation = "kobune.io/advertise-address"
)

// endpointLeaseName is this server's Lease: one per advertised address
// and port, so that a restart on the same one takes its Lease over.
func endpointLeaseName(host string, port int32) string {
	return "apiserver-" + strings.NewReplacer(":", "-", "%", "-").Replace(host) + "-" + strconv.Itoa(int(port))
}

// reconcileEndpoints renews this server's Lease and writes the kubernetes
// Endpoints and EndpointSlice from every Lease not expired.
func (s *systemServices) reconcileEndpoints(ctx context.Context) error {
	host, port := s.advertised()
	leaseKind, _ := scheme.ByResource("leases")
	now := meta.NowMicro()
	seconds := int32(max(s.cfg.EndpointLeaseDuration.Round(time.Second)/time.Second, 1))
	holder := net.JoinHostPort(host, strconv.Itoa(int(port)))
	own := &coordination.Lease{ObjectMeta: meta.ObjectMeta{Name: endpointLeaseName(host, port), Namespace: "kube-system",
		Labels: map[string]string{endpointLeaseLabel: "kube-apiserver"}, Annotations: map[string]string{endpointAnnotation: holder}},
		Spec: coordination.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &now}}
	if err := s.registry.CreateOrReplace(ctx, leaseKind, own); err != nil {
		return fmt.Errorf("renew the API server's Lease %s: %w", own.Name, err)
	}
	return s.publishEndpoints(ctx)
}

// publishEndpoints writes the kubernetes Endpoints and EndpointSlice from
// the API servers' Leases that have not expired.
func (s *systemServices) publishEndpoints(ctx context.Context) error {
	leases, err := registry.ListStoredIn[*coordination.Lease](ctx, s.store, "leases", "kube-system")
	if err != nil {
		return fmt.Errorf("read the API servers' Leases: %w", err)
	}
	byPort := map[int32][]string{}
	for _, l := range leases {
		addr := l.Annotations[endpointAnnotation]
		if l.Labels[endpointLeaseLabel] == "" || addr == "" || expired(l, time.Now()) {
			continue
		}
		h, p, err := net.SplitHostPort(addr)
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil || net.ParseIP(h) == nil {
			continue
		}
		byPort[int32(n)] = append(byPort[int32(n)], h)
	}
	return s.writeEndpoints(ctx, byPort)
}

func expired(l *coordination.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
}

// writeEndpoints writes the Endpoints (one subset per port) and the
// EndpointSlice (the lowest port's addresses: one slice carries one set
// of ports; API servers of one cluster share theirs) when they differ.
func (s *systemServices) writeEndpoints(ctx context.Context, byPort map[int32][]string) error {
	ports := make([]int32, 0, len(byPort))
	for p, hosts := range byPort {
		slices.Sort(hosts)
		byPort[p] = slices.Compact(hosts)
		ports = append(ports, p)
	}
	slices.SortFunc(ports, cmp.Compare[int32])
	var subsets []core.EndpointSubset
	for _, p := range ports {
		var addrs []core.EndpointAddress
		for _, h := range byPort[p] {
			addrs = append(addrs, core.EndpointAddress{IP: h})
		}
		subsets = append(subsets, core.EndpointSubset{Addresses: addrs, Ports: []core.EndpointPort{{Name: "https", Port: p, Protocol: core.ProtocolTCP}}})
	}
	epKind, _ := scheme.ByResource("endpoints")
	if have, err := registry.GetStored[*core.Endpoints](ctx, s.store, "endpoints", "default", "kubernetes"); err != nil || !reflect.DeepEqual(have.Subsets, subsets) {
		ep := &core.Endpoints{ObjectMeta: meta.ObjectMeta{Name: "kubernetes", Namespace: "default",
			Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}}, Subsets: subsets}
		if err := s.registry.CreateOrReplace(ctx, epKind, ep); err != nil {
			return fmt.Errorf("the kubernetes Endpoints: %w", err)
		}
	}
	// The EndpointSlice, which the node proxies follow (kube-apiserver
	// writes both): pods reach the API at https://kubernetes.default.svc.
	sliceKind, _ := scheme.ByResource("endpointslices")
	ready, name, proto := true, "https", core.ProtocolTCP
	slice := &discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{Name: "kubernetes", Namespace: "default",
		Labels: map[string]string{discovery.LabelServiceName: "kubernetes", discovery.LabelManagedBy: "kobune-apiserver"}},
		AddressType: discovery.AddressTypeIPv4}
	if len(ports) > 0 {
		port := ports[0]
		for _, h := range byPort[port] {
			slice.Endpoints = append(slice.Endpoints, discovery.Endpoint{Addresses: []string{h}, Conditions: discovery.EndpointConditions{Ready: &ready}})
		}
		slice.Ports = []discovery.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}}
	}
	if have, err := registry.GetStored[*discovery.EndpointSlice](ctx, s.store, "endpointslices", "default", "kubernetes"); err == nil &&
		reflect.DeepEqual(have.Endpoints, slice.Endpoints) && reflect.DeepEqual(have.Ports, slice.Ports) {
		return nil
	}
	if err := s.registry.CreateOrReplace(ctx, sliceKind, slice); err != nil {
		return fmt.Errorf("the kubernetes EndpointSlice: %w", err)
	}
	return nil
}

// runEndpoints reconciles every EndpointReconcileInterval until ctx
// ends, then gives this server's Lease up (kube-apiserver removes its
// address when it stops) and writes the endpoints without it.
func (s *systemServices) runEndpoints(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			host, port := s.advertised()
			stop, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			key := storage.Key("leases", "kube-system", endpointLeaseName(host, port))
			if kv, err := s.store.Get(stop, key); err == nil {
				if _, err := s.store.Delete(stop, key, kv.Revision); err == nil {
					_ = s.publishEndpoints(stop)
				}
			}
			return
		case <-time.After(s.cfg.EndpointReconcileInterval):
		}
		if err := s.reconcileEndpoints(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logf("%v (trying again in %v)", err, s.cfg.EndpointReconcileInterval)
		}
	}
}
