package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
)

func svc(name, ip string, mutate ...func(*core.Service)) *core.Service {
	s := &core.Service{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
		Spec: core.ServiceSpec{Type: core.ServiceTypeClusterIP, ClusterIP: ip, SessionAffinity: core.ServiceAffinityNone,
			Ports: []core.ServicePort{{Name: "http", Port: 80, Protocol: core.ProtocolTCP}}}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

type ep struct {
	ip, node string
	ready    bool
}

func slice(svcName string, port int32, eps ...ep) *discovery.EndpointSlice {
	name, proto := "http", core.ProtocolTCP
	s := &discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: svcName + "-x", Labels: map[string]string{discovery.LabelServiceName: svcName}},
		AddressType: discovery.AddressTypeIPv4, Ports: []discovery.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}}}
	for _, e := range eps {
		ready, node := e.ready, e.node
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{e.ip}, NodeName: &node, Conditions: discovery.EndpointConditions{Ready: &ready}})
	}
	return s
}

func sync(t *testing.T, p *Proxy, svcs []*core.Service, slices []*discovery.EndpointSlice) {
	t.Helper()
	if err := p.Sync(context.Background(), svcs, slices); err != nil {
		t.Fatal(err)
	}
}

// fresh is the table a just-started proxy writes for the same input.
func fresh(t *testing.T, svcs []*core.Service, slices []*discovery.EndpointSlice) string {
	t.Helper()
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	sync(t, New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake), svcs, slices)
	return canonical(fake.Dump())
}

// canonical is a dump with the map elements sorted: the order a map's
// elements were added in means nothing (a chain's rules keep theirs).
func canonical(dump string) string {
	var rest, elems []string
	for _, l := range strings.Split(dump, "\n") {
		if strings.HasPrefix(l, "add element ") {
			elems = append(elems, l)
		} else {
			rest = append(rest, l)
		}
	}
	sort.Strings(elems)
	return strings.Join(append(rest, elems...), "\n")
}

// sample is a few Services of every sort and their slices: endpoints on
// this node and another, one not ready, none at all, a NodePort, ClientIP
// affinity, a headless Service.
func sample() ([]*core.Service, []*discovery.EndpointSlice) {
	svcs := []*core.Service{
		svc("web", "10.96.0.10"),
		svc("empty", "10.96.0.11"),
		svc("np", "10.96.0.12", func(s *core.Service) {
			s.Spec.Type, s.Spec.ExternalTrafficPolicy = core.ServiceTypeNodePort, core.TrafficCluster
			s.Spec.Ports[0].NodePort = 30080
		}),
		svc("sticky", "10.96.0.13", func(s *core.Service) {
			s.Spec.SessionAffinity = core.ServiceAffinityClientIP
			t := int32(60)
			s.Spec.SessionAffinityConfig = &core.SessionAffinityConfig{ClientIP: &core.ClientIPConfig{TimeoutSeconds: &t}}
		}),
		svc("headless", "None"),
	}
	slices := []*discovery.EndpointSlice{
		slice("web", 8080, ep{"10.244.1.2", "node-1", true}, ep{"10.244.2.3", "node-2", true}, ep{"10.244.2.4", "node-2", false}),
		slice("np", 8080, ep{"10.244.2.3", "node-2", true}),
		slice("sticky", 8080, ep{"10.244.2.5", "node-2", true}),
	}
	return svcs, slices
}

// The rules a Service gets: a verdict-map element per cluster IP, port and
// protocol, a chain choosing among the ready endpoints, a DNAT chain per
// endpoint (masquerading this node's pods to this node's endpoints), node
// ports, ClientIP affinity sets, and a reject for a Service without
// endpoints.
func TestRulesForServices(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	svcs, slices := sample()
	sync(t, p, svcs, slices)
	dump := fake.Dump()
	for _, want := range []string{
		"add element ip kobune-proxy service-ips { 10.96.0.10 . tcp . 80 : goto lb-tcp-2 }",
		"add element ip kobune-proxy no-endpoint-services { 10.96.0.11 . tcp . 80 : goto reject-chain }",
		"add element ip kobune-proxy service-nodeports { tcp . 30080 : goto lb-tcp-1-nodeport }",
		"add element ip kobune-proxy service-ips { 10.96.0.13 . tcp . 80 : goto service-H6U4RGLG-default/sticky/tcp/http }",
		"add rule ip kobune-proxy lb-tcp-1-nodeport jump mark-for-masquerade",
		"add rule ip kobune-proxy lb-tcp-2 meta l4proto tcp dnat to ip daddr . meta l4proto . tcp dport . numgen random mod 2 map @service-endpoints",
		"add element ip kobune-proxy service-endpoints { 10.96.0.10 . tcp . 80 . 0 : 10.244.1.2 . 8080 }",
		"add element ip kobune-proxy service-endpoints { 10.96.0.10 . tcp . 80 . 1 : 10.244.2.3 . 8080 }",
		"add rule ip kobune-proxy lb-tcp-1-nodeport meta l4proto tcp dnat to meta l4proto . tcp dport . numgen random mod 1 map @nodeport-endpoints",
		"add element ip kobune-proxy nodeport-endpoints { tcp . 30080 . 0 : 10.244.2.3 . 8080 }",
		"add rule ip kobune-proxy masquerading ip saddr 10.244.1.0/24 ip daddr 10.244.1.0/24 ct status dnat jump mark-for-masquerade",
		"ip saddr @affinity-FM3PDP2R update @affinity-FM3PDP2R { ip saddr } meta l4proto tcp dnat to 10.244.2.5:8080",
		"update @affinity-FM3PDP2R { ip saddr } meta l4proto tcp dnat to 10.244.2.5:8080",
		"timeout 60s",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, dump)
		}
	}
	for _, absent := range []string{"10.244.2.4", "None"} {
		if strings.Contains(dump, absent) {
			t.Errorf("ruleset has %q (a not-ready endpoint, a headless Service):\n%s", absent, dump)
		}
	}
	if n := strings.Count(dump, "dnat to "); n != 5 {
		t.Errorf("%d DNAT rules, want 5: web 1, np 1 (+1 for the node port), sticky 2 (affinity, then pick):\n%s", n, dump)
	}
}

// A change rewrites only its own chains and elements, and the result is
// exactly what a freshly started proxy would write for the same state.
func TestIncrementalSyncMatchesAFullOne(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	var svcs []*core.Service
	var slices []*discovery.EndpointSlice
	for i := range 50 {
		name := fmt.Sprintf("svc-%d", i)
		svcs = append(svcs, svc(name, fmt.Sprintf("10.96.1.%d", i+1)))
		slices = append(slices, slice(name, 8080, ep{fmt.Sprintf("10.244.2.%d", i+1), "node-2", true}))
	}
	sync(t, p, svcs, slices)
	steps := []struct {
		name   string
		change func()
		maxOps int
	}{
		{"an endpoint turns not ready", func() { *slices[7].Endpoints[0].Conditions.Ready = false }, 12},
		{"it is ready again", func() { *slices[7].Endpoints[0].Conditions.Ready = true }, 12},
		{"an endpoint is added", func() {
			slices[3] = slice("svc-3", 8080, ep{"10.244.2.4", "node-2", true}, ep{"10.244.1.9", "node-1", true})
		}, 16},
		{"a Service is deleted", func() { svcs = svcs[1:]; slices = slices[1:] }, 12},
		{"a Service is added", func() {
			svcs = append(svcs, svc("new", "10.96.2.1"))
			slices = append(slices, slice("new", 9090, ep{"10.244.2.200", "node-2", true}))
		}, 12},
	}
	for _, st := range steps {
		st.change()
		before := canonical(fake.Dump())
		if err := p.Sync(context.Background(), svcs, slices); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		after := canonical(fake.Dump())
		if after == before {
			t.Errorf("%s: nothing changed in the kernel", st.name)
		}
		if want := fresh(t, svcs, slices); after != want {
			t.Errorf("%s: the incremental result differs from a full sync:\n%s", st.name, lineDiff(after, want))
		}
	}
	// Counting operations: a sync of one change, and of none.
	w := &nftWriter{tx: fake.NewTransaction()}
	plan(p, w, svcs, slices)
	if n := w.tx.NumOperations(); n != 0 {
		t.Errorf("a sync without change has %d operations", n)
	}
	*slices[10].Endpoints[0].Conditions.Ready = false
	w = &nftWriter{tx: fake.NewTransaction()}
	plan(p, w, svcs, slices)
	if n := w.tx.NumOperations(); n == 0 || n > 12 {
		t.Errorf("one endpoint change among 50 Services: %d operations, want a handful", n)
	}
}

// A restarted agent takes over the table it finds: its first sync
// replaces everything in one transaction and drops chains that are no
// longer wanted.
func TestFirstSyncReplacesWhatAPreviousAgentLeft(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	old := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	sync(t, old, []*core.Service{svc("gone", "10.96.0.20"), svc("web", "10.96.0.10")},
		[]*discovery.EndpointSlice{slice("gone", 80, ep{"10.244.2.9", "node-2", true}), slice("web", 80, ep{"10.244.2.3", "node-2", true})})
	svcs := []*core.Service{svc("web", "10.96.0.10")}
	slices := []*discovery.EndpointSlice{slice("web", 80, ep{"10.244.2.3", "node-2", true})}
	sync(t, New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake), svcs, slices)
	if got, want := canonical(fake.Dump()), fresh(t, svcs, slices); got != want {
		t.Errorf("after the restart:\n%s\nwant:\n%s", got, want)
	}
}

// lineDiff lists the lines only one of a (-) and b (+) has.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for l := range ma {
		if !mb[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// UDP has no connection end: when an endpoint of a UDP Service goes, the
// conntrack entries of flows DNATed to it are deleted (else those flows
// keep going to the dead address); when a UDP destination gets its first
// endpoint, every entry to it is deleted (its packets were rejected
// before). TCP Services delete nothing.
func TestUDPConntrackCleanup(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	var got []string
	p.Conntrack = func(_ context.Context, f ConntrackFilter) error {
		got = append(got, fmt.Sprintf("%s:%d<-%s", f.OrigDst, f.Port, f.ReplySrc))
		return nil
	}
	udp := func(s *core.Service) {
		s.Spec.Type = core.ServiceTypeNodePort
		s.Spec.Ports[0].Protocol, s.Spec.Ports[0].NodePort = core.ProtocolUDP, 30053
	}
	udpSlice := func(eps ...ep) *discovery.EndpointSlice {
		s := slice("dns", 5353, eps...)
		proto := core.ProtocolUDP
		s.Ports[0].Protocol = &proto
		return s
	}
	svcs := []*core.Service{svc("dns", "10.96.0.53", udp), svc("web", "10.96.0.10")}
	step := func(want []string, slices ...*discovery.EndpointSlice) {
		t.Helper()
		got = nil
		sync(t, p, svcs, slices)
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("conntrack deletes %v, want %v", got, want)
		}
	}
	a, b := ep{"10.244.2.3", "node-2", true}, ep{"10.244.2.4", "node-2", true}
	step(nil, udpSlice(a, b), slice("web", 8080, a)) // the first sync after a start: nothing known to clean
	step([]string{"10.96.0.53:80<-10.244.2.3", ":30053<-10.244.2.3"}, udpSlice(b), slice("web", 8080, b))
	step([]string{"10.96.0.53:80<-10.244.2.4", ":30053<-10.244.2.4"}, slice("web", 8080, b))
	step([]string{"10.96.0.53:80<-", ":30053<-"}, udpSlice(a), slice("web", 8080, b))
	svcs = svcs[1:]
	step([]string{"10.96.0.53:80<-10.244.2.3", ":30053<-10.244.2.3"}, slice("web", 8080, b))
}

// plan writes to w what a sync of svcs and slices would change, without
// applying it.
func plan(p *Proxy, w writer, svcs []*core.Service, slices []*discovery.EndpointSlice) {
	last, want, _ := p.changed(p.fragmentsFor(svcs, slices))
	incremental(w, last, want)
}

// A sync rebuilds only the Services whose object or slices moved to a new
// resourceVersion (as every change in the API does); the others' rules
// are reused as they are, and nothing is written for them.
func TestUnchangedServicesAreReused(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	var svcs []*core.Service
	var slices []*discovery.EndpointSlice
	for i := range 20 {
		name := fmt.Sprintf("svc-%d", i)
		svcs = append(svcs, svc(name, fmt.Sprintf("10.96.1.%d", i+1)))
		svcs[i].ResourceVersion = "1"
		slices = append(slices, slice(name, 8080, ep{fmt.Sprintf("10.244.2.%d", i+1), "node-2", true}))
		slices[i].ResourceVersion = "1"
	}
	sync(t, p, svcs, slices)
	before := p.fragments
	slices[4] = slice("svc-4", 8080, ep{"10.244.2.99", "node-2", true})
	slices[4].ResourceVersion = "2"
	slices = append(slices[:9], slices[10:]...) // svc-9 loses its slice
	sync(t, p, svcs, slices)
	for id, f := range p.fragments {
		if reused := before[id] == f; reused != (id.name != "svc-4" && id.name != "svc-9") {
			t.Errorf("%s: fragment reused %v", id, reused)
		}
	}
	if n := p.LastSync.Operations; n == 0 || n > 10 {
		t.Errorf("two Services changed among 20: %d operations", n)
	}
	if got, want := canonical(fake.Dump()), fresh(t, svcs, slices); got != want {
		t.Errorf("the result differs from a full sync:\n%s", lineDiff(got, want))
	}
	if !strings.Contains(fake.Dump(), "10.96.1.5 . tcp . 80 . 0 : 10.244.2.99 . 8080") || !strings.Contains(fake.Dump(), "10.96.1.10 . tcp . 80 : goto reject-chain") {
		t.Errorf("the changes are not in the table:\n%s", fake.Dump())
	}
}

// Map elements in the kernel's form, as nft lays them out: every part
// padded to 4 bytes, addresses and ports in network order, numgen's index
// in host order (TestNetlinkRulesListAsTheirText checks the whole against
// nft as root).
func TestElementEncoding(t *testing.T) {
	k, err := encode(layouts[endpointsMap][0], "10.96.0.10 . tcp . 80 . 1")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{10, 96, 0, 10, 6, 0, 0, 0, 0, 80, 0, 0}
	want = binary.NativeEndian.AppendUint32(want, 1)
	if !bytes.Equal(k, want) {
		t.Errorf("key % x, want % x", k, want)
	}
	if v, err := encode(layouts[endpointsMap][1], "10.244.1.2 . 8080"); err != nil || !bytes.Equal(v, []byte{10, 244, 1, 2, 0x1f, 0x90, 0, 0}) {
		t.Errorf("value % x, %v", v, err)
	}
	for _, bad := range []string{"10.96.0.10 . tcp . 80", "fe80::1 . tcp . 80 . 0", "10.96.0.10 . tcp . http . 0"} {
		if _, err := encode(layouts[endpointsMap][0], bad); err == nil {
			t.Errorf("%q encoded without error", bad)
		}
	}
}

// A LoadBalancer Service is served as a NodePort one: its cluster IP and
// its node ports (Kobune provisions no load balancer).
func TestLoadBalancerServiceGetsNodePortRules(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	svcs := []*core.Service{svc("lb", "10.96.0.20", func(s *core.Service) {
		s.Spec.Type, s.Spec.ExternalTrafficPolicy = core.ServiceTypeLoadBalancer, core.TrafficCluster
		s.Spec.Ports[0].NodePort = 30090
	})}
	sync(t, p, svcs, []*discovery.EndpointSlice{slice("lb", 8080, ep{"10.244.2.3", "node-2", true})})
	dump := fake.Dump()
	for _, want := range []string{
		"add element ip kobune-proxy service-ips { 10.96.0.20 . tcp . 80 : goto lb-tcp-1 }",
		"add element ip kobune-proxy service-nodeports { tcp . 30090 : goto lb-tcp-1-nodeport }",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, dump)
		}
	}
}
