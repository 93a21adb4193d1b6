package apiserver_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestServiceCIDRsAndIPAddresses: the API server keeps the default
// ServiceCIDR "kubernetes" for its range, Ready and with its finalizer;
// another ServiceCIDR widens what Services may be given (an address asked
// for in it is taken; when the default range is full, addresses come from
// it); IPAddress objects reserve their address against Services and the
// other way round; bad ranges and addresses are refused naming the field.
func TestServiceCIDRsAndIPAddresses(t *testing.T) {
	s := testserver.New(t, func(c *apiserver.Config) { c.ServiceClusterIPRange = "10.97.0.0/29" })
	ctx := ctxT(t)
	cidrs := client.For[*networking.ServiceCIDR](s.Client)
	addrs := client.For[*networking.IPAddress](s.Client)
	svcs := client.For[*core.Service](s.Client)

	def, err := cidrs.Get(ctx, "", networking.DefaultServiceCIDRName)
	if err != nil {
		t.Fatalf("the default ServiceCIDR: %v", err)
	}
	if !slices.Equal(def.Spec.CIDRs, []string{"10.97.0.0/29"}) || !slices.Contains(def.Finalizers, networking.ServiceCIDRFinalizer) ||
		len(def.Status.Conditions) != 1 || def.Status.Conditions[0].Type != "Ready" || def.Status.Conditions[0].Status != meta.ConditionTrue {
		t.Errorf("default ServiceCIDR: %+v", def)
	}
	code, _, body := newRESTClient(t, client.Config{}, s.Addr()).do("GET", "/apis/networking.k8s.io/v1/servicecidrs/kubernetes/status", "", "")
	if code != 200 || !strings.Contains(string(body), `"kind":"ServiceCIDR"`) || !strings.Contains(string(body), string(def.UID)) {
		t.Errorf("GET servicecidrs/kubernetes/status: %d %s", code, body)
	}

	// Bad ServiceCIDRs and IPAddresses, each naming its field.
	ref := &networking.ParentReference{Resource: "myresources", Namespace: "foo", Name: "bar"}
	for _, tt := range []struct {
		name string
		obj  any
		want string
	}{
		{"no range", &networking.ServiceCIDR{ObjectMeta: meta.ObjectMeta{Name: "none"}}, "spec.cidrs: Required value"},
		{"not canonical", &networking.ServiceCIDR{ObjectMeta: meta.ObjectMeta{Name: "bad"}, Spec: networking.ServiceCIDRSpec{CIDRs: []string{"203.0.113.7/24"}}},
			`spec.cidrs[0]: Invalid value: "203.0.113.7/24": must be in canonical form ("203.0.113.0/24")`},
		{"IPv6", &networking.ServiceCIDR{ObjectMeta: meta.ObjectMeta{Name: "six"}, Spec: networking.ServiceCIDRSpec{CIDRs: []string{"2001:db8::/64"}}},
			"spec.cidrs[0]: Invalid value: \"2001:db8::/64\": Kobune's Services are IPv4 only"},
		{"two IPv4", &networking.ServiceCIDR{ObjectMeta: meta.ObjectMeta{Name: "two"}, Spec: networking.ServiceCIDRSpec{CIDRs: []string{"203.0.113.0/24", "198.51.100.0/24"}}},
			"may specify no more than one IP for each IP family"},
		{"address not canonical", &networking.IPAddress{ObjectMeta: meta.ObjectMeta{Name: "010.97.0.3"}, Spec: networking.IPAddressSpec{ParentRef: ref}},
			"metadata.name: Invalid value: \"010.97.0.3\": must be a valid IP address"},
		{"no parent", &networking.IPAddress{ObjectMeta: meta.ObjectMeta{Name: "10.97.0.3"}}, "spec.parentRef: Required value"},
		{"parent without a resource", &networking.IPAddress{ObjectMeta: meta.ObjectMeta{Name: "10.97.0.3"},
			Spec: networking.IPAddressSpec{ParentRef: &networking.ParentReference{Name: "bar"}}}, "spec.parentRef.resource: Required value"},
	} {
		var err error
		switch o := tt.obj.(type) {
		case *networking.ServiceCIDR:
			_, err = cidrs.Create(ctx, o)
		case *networking.IPAddress:
			_, err = addrs.Create(ctx, o)
		}
		if !client.IsInvalid(err) || !strings.Contains(client.Message(err), tt.want) {
			t.Errorf("%s: %v; want Invalid with %q", tt.name, err, tt.want)
		}
	}
	if l, _, _ := addrs.List(ctx, "", client.ListOptions{}); len(l) != 0 {
		t.Errorf("refused IPAddresses were stored: %v", l)
	}

	// An IPAddress reserves its address; a Service's address cannot be an IPAddress.
	if _, err := addrs.Create(ctx, &networking.IPAddress{ObjectMeta: meta.ObjectMeta{Name: "10.97.0.1"}, Spec: networking.IPAddressSpec{ParentRef: ref}}); !client.IsAlreadyExists(err) ||
		!strings.Contains(client.Message(err), "services/default/kubernetes") {
		t.Errorf("an IPAddress for the kubernetes Service's address: %v; want AlreadyExists naming the Service", err)
	}
	if _, err := addrs.Create(ctx, &networking.IPAddress{ObjectMeta: meta.ObjectMeta{Name: "10.97.0.3", Labels: map[string]string{"type": "reserved"}},
		Spec: networking.IPAddressSpec{ParentRef: ref}}); err != nil {
		t.Fatalf("an IPAddress: %v", err)
	}
	if _, err := addrs.Create(ctx, &networking.IPAddress{ObjectMeta: meta.ObjectMeta{Name: "fe80::42:1dff:fe84:f9e2"}, Spec: networking.IPAddressSpec{ParentRef: ref}}); err != nil {
		t.Errorf("an IPv6 IPAddress: %v", err)
	}
	if _, err := svcs.Create(ctx, service("wants-3", core.ServiceTypeClusterIP, func(s *core.Service) { s.Spec.ClusterIP = "10.97.0.3" })); !client.IsInvalid(err) ||
		!strings.Contains(client.Message(err), "provided IP is already allocated") {
		t.Errorf("a Service asking for an IPAddress's address: %v", err)
	}
	if _, err := addrs.Update(ctx, &networking.IPAddress{ObjectMeta: meta.ObjectMeta{Name: "10.97.0.3"},
		Spec: networking.IPAddressSpec{ParentRef: &networking.ParentReference{Resource: "other", Name: "x"}}}); !client.IsInvalid(err) ||
		!strings.Contains(client.Message(err), "spec.parentRef: Invalid value") {
		t.Errorf("changing an IPAddress's parent: %v; want Invalid (immutable)", err)
	}

	// Outside every range until a ServiceCIDR holds it.
	outside := service("outside", core.ServiceTypeClusterIP, func(s *core.Service) { s.Spec.ClusterIP = "203.0.113.10" })
	if _, err := svcs.Create(ctx, outside); !client.IsInvalid(err) || !strings.Contains(client.Message(err), "not in the valid range") {
		t.Errorf("an address in no range: %v", err)
	}
	if _, err := cidrs.Create(ctx, &networking.ServiceCIDR{ObjectMeta: meta.ObjectMeta{Name: "extra"}, Spec: networking.ServiceCIDRSpec{CIDRs: []string{"203.0.113.0/30"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, outside); !client.IsInvalid(err) || !strings.Contains(client.Message(err), "10.97.0.0/29, 203.0.113.0/30") {
		t.Errorf("203.0.113.10, outside 203.0.113.0/30 too: %v; want Invalid naming both ranges", err)
	}
	outside.Spec.ClusterIP = "203.0.113.2"
	if got, err := svcs.Create(ctx, outside); err != nil || got.Spec.ClusterIP != "203.0.113.2" {
		t.Fatalf("an address of the new ServiceCIDR: %+v %v", got, err)
	}
	// The default range has 10.97.0.2–6, one of them reserved above: four
	// Services fill it, the next gets the other range's last address, then
	// every range is full.
	var got []string
	for i := range 6 {
		sv, err := svcs.Create(ctx, service("fill-"+string(rune('a'+i)), core.ServiceTypeClusterIP))
		if err != nil {
			got = append(got, "error: "+client.Message(err))
			continue
		}
		got = append(got, sv.Spec.ClusterIP)
	}
	for i, ip := range got[:4] {
		if !strings.HasPrefix(ip, "10.97.0.") || ip == "10.97.0.3" {
			t.Errorf("service %d: %s; want an address of the default range (not the reserved 10.97.0.3)", i, ip)
		}
	}
	if got[4] != "203.0.113.1" {
		t.Errorf("with the default range full: %s; want 203.0.113.1 from the ServiceCIDR extra", got[4])
	}
	if !strings.Contains(got[5], "range is full") || !strings.Contains(got[5], "203.0.113.0/30") {
		t.Errorf("with every range full: %s; want an error naming both ranges", got[5])
	}
	// Deleting the IPAddress frees its address.
	if err := addrs.Delete(ctx, "", "10.97.0.3", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if sv, err := svcs.Create(ctx, service("wants-3", core.ServiceTypeClusterIP, func(s *core.Service) { s.Spec.ClusterIP = "10.97.0.3" })); err != nil || sv.Spec.ClusterIP != "10.97.0.3" {
		t.Errorf("the address after its IPAddress was deleted: %v", err)
	}
}
