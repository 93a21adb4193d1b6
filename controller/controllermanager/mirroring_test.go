package controllermanager_test

import (
	"context"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller/endpointslicemirroring"
	testcluster "github.com/kobune/kobune/test/cluster"
)

// TestEndpointSliceMirroring: the Endpoints object of a Service without a
// selector is mirrored into an EndpointSlice (its addresses, ready or
// not, and ports; the Service's name and the mirroring controller's
// managed-by label; owned by the Endpoints), kept as the Endpoints change
// and deleted with them; Endpoints of a Service with a selector are the
// endpointslice controller's and are not mirrored.
func TestEndpointSliceMirroring(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testcluster.Start(t, ctx, testcluster.Options{Nodes: 1}).Client
	svcs, eps, slices := client.For[*core.Service](c), client.For[*core.Endpoints](c), client.For[*discovery.EndpointSlice](c)
	if _, err := svcs.Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "outside", Namespace: "default"},
		Spec: core.ServiceSpec{Ports: []core.ServicePort{{Name: "db", Port: 5432}}}}); err != nil {
		t.Fatal(err)
	}
	e, err := eps.Create(ctx, &core.Endpoints{ObjectMeta: meta.ObjectMeta{Name: "outside", Namespace: "default", Labels: map[string]string{"team": "a"}},
		Subsets: []core.EndpointSubset{{Addresses: []core.EndpointAddress{{IP: "10.1.2.3"}}, NotReadyAddresses: []core.EndpointAddress{{IP: "10.1.2.4"}},
			Ports: []core.EndpointPort{{Name: "db", Port: 5432}}}}})
	if err != nil {
		t.Fatal(err)
	}
	mirrored := func(what string, ok func([]*discovery.EndpointSlice) bool) []*discovery.EndpointSlice {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			list, _, err := slices.List(ctx, "default", client.ListOptions{LabelSelector: discovery.LabelServiceName + "=outside"})
			if err == nil && ok(list) {
				return list
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: slices %+v (%v)", what, list, err)
			}
		}
	}
	addresses := func(s *discovery.EndpointSlice) (ready, notReady []string) {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				ready = append(ready, ep.Addresses...)
			} else {
				notReady = append(notReady, ep.Addresses...)
			}
		}
		return ready, notReady
	}
	list := mirrored("mirrored", func(l []*discovery.EndpointSlice) bool { return len(l) == 1 })
	s := list[0]
	ready, notReady := addresses(s)
	if s.Labels[discovery.LabelManagedBy] != endpointslicemirroring.ManagedByMirroring || s.Labels["team"] != "a" || len(s.Ports) != 1 || *s.Ports[0].Port != 5432 ||
		len(ready) != 1 || ready[0] != "10.1.2.3" || len(notReady) != 1 || notReady[0] != "10.1.2.4" || meta.ControllerOf(s) == nil || meta.ControllerOf(s).UID != e.UID {
		t.Errorf("the mirrored slice: %+v", s)
	}
	e.Subsets[0].Addresses, e.Subsets[0].NotReadyAddresses = []core.EndpointAddress{{IP: "10.2.3.4"}}, nil
	if _, err := eps.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	mirrored("updated", func(l []*discovery.EndpointSlice) bool {
		if len(l) != 1 {
			return false
		}
		r, nr := addresses(l[0])
		return len(r) == 1 && r[0] == "10.2.3.4" && len(nr) == 0
	})
	if err := eps.Delete(ctx, "default", "outside", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mirrored("deleted with the Endpoints", func(l []*discovery.EndpointSlice) bool { return len(l) == 0 })

	// A Service with a selector: its slices are the endpointslice
	// controller's (managed-by endpointslice-controller.k8s.io) only.
	if _, err := svcs.Create(ctx, &core.Service{ObjectMeta: meta.ObjectMeta{Name: "inside", Namespace: "default"},
		Spec: core.ServiceSpec{Selector: map[string]string{"app": "inside"}, Ports: []core.ServicePort{{Port: 80}}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	inside, _, _ := slices.List(ctx, "default", client.ListOptions{LabelSelector: discovery.LabelServiceName + "=inside"})
	for _, s := range inside {
		if s.Labels[discovery.LabelManagedBy] != discovery.ManagedByController {
			t.Errorf("a slice of a Service with a selector managed by %q", s.Labels[discovery.LabelManagedBy])
		}
	}
}
