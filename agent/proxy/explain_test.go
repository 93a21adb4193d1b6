package proxy

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
)

// Explain reads a packet's way from the table: the map element, the
// Service chain with each endpoint's DNAT, the masquerade for this node's
// pods reaching this node's endpoint, and the reject of a Service
// without endpoints.
func TestExplainFollowsThePacket(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24"}, fake)
	svcs, slices := sample()
	sync(t, p, svcs, slices)
	text := func(ctx context.Context, chain string) ([]string, error) {
		rules, err := fake.ListRules(ctx, chain)
		var out []string
		for _, r := range rules {
			out = append(out, r.Rule)
		}
		return out, err
	}
	ctx := context.Background()
	hops, err := p.Explain(ctx, text, "10.96.0.10", "TCP", 80, "10.244.1.9")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, h := range hops {
		b.WriteString(h.Object + " | " + strings.Join(h.Lines, " ; ") + " | " + h.Explain + "\n")
	}
	got := b.String()
	if len(hops) != 3 {
		t.Fatalf("%d hops, want map, Service chain and the masquerade:\n%s", len(hops), got)
	}
	for _, want := range []string{
		"map service-ips | 10.96.0.10 . tcp . 80 : goto lb-tcp-2 |",
		"chain lb-tcp-2 | meta l4proto tcp dnat to ip daddr . meta l4proto . tcp dport . numgen random mod 2 map @service-endpoints ; map service-endpoints: 10.96.0.10 . tcp . 80 . 0 : 10.244.1.2 . 8080 ;",
		"one of 2 endpoints at random for each new connection (numgen random, an index into the endpoints map): DNAT to 10.244.1.2:8080, DNAT to 10.244.2.3:8080",
		"map service-endpoints: 10.96.0.10 . tcp . 80 . 1 : 10.244.2.3 . 8080",
		"chain masquerading | ip saddr 10.244.1.0/24 ip daddr 10.244.1.0/24 ct status dnat jump mark-for-masquerade | masqueraded after DNAT to 10.244.1.2:8080: 10.244.1.9 is a pod of this node",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	hops, err = p.Explain(ctx, text, "10.96.0.11", "tcp", 80, "")
	if err != nil || len(hops) != 1 || hops[0].Object != "map no-endpoint-services" || !strings.Contains(hops[0].Explain, "refused") {
		t.Errorf("a Service without endpoints: %+v %v", hops, err)
	}
	hops, err = p.Explain(ctx, text, "10.96.0.13", "tcp", 80, "")
	if err != nil || len(hops) != 2 || !strings.Contains(hops[1].Explain, "ClientIP") || !strings.Contains(hops[1].Explain, "10.244.2.5:8080") {
		t.Errorf("a sticky Service: %+v %v", hops, err)
	}
	if hops, err = p.Explain(ctx, text, "10.96.9.9", "tcp", 80, ""); err != nil || len(hops) != 1 || !strings.Contains(hops[0].Explain, "does not know") {
		t.Errorf("an unknown address: %+v %v", hops, err)
	}
}

// The kubernetes Service's endpoint is the API server on its host,
// outside the pod range: its way names the masquerade to the node.
func TestExplainTheAPIServersEndpoint(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	p := New(Config{NodeName: "node-1", PodCIDR: "10.244.1.0/24", ClusterCIDR: "10.244.0.0/16"}, fake)
	sync(t, p, []*core.Service{svc("kubernetes", "10.96.0.1")}, []*discovery.EndpointSlice{slice("kubernetes", 6443, ep{"172.31.0.1", "", true})})
	text := func(ctx context.Context, chain string) ([]string, error) {
		rules, err := fake.ListRules(ctx, chain)
		var out []string
		for _, r := range rules {
			out = append(out, r.Rule)
		}
		return out, err
	}
	hops, err := p.Explain(context.Background(), text, "10.96.0.1", "tcp", 80, "")
	if err != nil {
		t.Fatal(err)
	}
	last := hops[len(hops)-1]
	if !strings.Contains(last.Explain, "172.31.0.1:6443: outside the cluster's pod range 10.244.0.0/16") ||
		!strings.Contains(strings.Join(last.Lines, ""), "ip daddr != 10.244.0.0/16 ct status dnat jump mark-for-masquerade") {
		t.Errorf("the API server's endpoint: %+v", hops)
	}
}
