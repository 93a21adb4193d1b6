package netpol

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
)

func pod(ns, name, node, ip string, labels map[string]string, mod ...func(*core.Pod)) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:   core.PodSpec{NodeName: node, Containers: []core.Container{{Name: "c", Ports: []core.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: core.ProtocolTCP}}}}},
		Status: core.PodStatus{Phase: core.PodRunning, PodIP: ip}}
	for _, m := range mod {
		m(p)
	}
	return p
}

func policy(t *testing.T, doc string) *networking.NetworkPolicy {
	t.Helper()
	np := &networking.NetworkPolicy{}
	if err := yaml.UnmarshalStrict([]byte(doc), np); err != nil {
		t.Fatal(err)
	}
	networking.SetDefaultsNetworkPolicy(np)
	if err := networking.ValidateNetworkPolicy(np).ToError(); err != nil {
		t.Fatal(err)
	}
	return np
}

// What a pod is allowed does not grow with the number of peers: 200
// client pods next to each other are one range; pods of other nodes,
// host-network pods and finished pods are never isolated here, and the
// last two are no peers either; a named ingress port is the pod's own.
func TestAllowedElements(t *testing.T) {
	web := map[string]string{"app": "web"}
	pods := []*core.Pod{
		pod("shop", "web-1", "node-1", "10.244.1.2", web),
		pod("shop", "web-2", "node-1", "10.244.1.3", web, func(p *core.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 }),
		pod("shop", "web-3", "node-2", "10.244.2.2", web),
		pod("shop", "host", "node-1", "192.168.1.5", map[string]string{"role": "client"}, func(p *core.Pod) { p.Spec.HostNetwork = true }),
		pod("shop", "done", "node-1", "10.244.1.200", map[string]string{"role": "client"}, func(p *core.Pod) { p.Status.Phase = core.PodSucceeded }),
	}
	for i := 0; i < 200; i++ {
		pods = append(pods, pod("shop", fmt.Sprint("client-", i), "node-2", fmt.Sprintf("10.244.3.%d", i+1), map[string]string{"role": "client"}))
	}
	pods = append(pods, pod("shop", "odd", "node-2", "10.244.4.9", map[string]string{"role": "client"}))
	np := policy(t, "metadata: {namespace: shop, name: web}\nspec: {podSelector: {matchLabels: {app: web}}, ingress: [{from: [{podSelector: {matchLabels: {role: client}}}], ports: [{port: http}, {port: 9000, endPort: 9100}]}]}")
	got := Build("node-1", State{Pods: pods, Policies: []*networking.NetworkPolicy{np}}).String()
	chain1, chain2 := "ingress-"+hash("shop/web-1"), "ingress-"+hash("shop/web-2")
	want := "" +
		"ingress-allowed 10.244.1.2 . 10.244.3.1-10.244.3.200 . tcp . 8080  # shop/web ingress[0]\n" +
		"ingress-allowed 10.244.1.2 . 10.244.4.9 . tcp . 8080  # shop/web ingress[0]\n" +
		"ingress-allowed 10.244.1.2 . 10.244.3.1-10.244.3.200 . tcp . 9000-9100  # shop/web ingress[0]\n" +
		"ingress-allowed 10.244.1.2 . 10.244.4.9 . tcp . 9000-9100  # shop/web ingress[0]\n" +
		// web-2's http is 9090, inside 9000-9100: one piece.
		"ingress-allowed 10.244.1.3 . 10.244.3.1-10.244.3.200 . tcp . 9000-9100  # shop/web ingress[0]\n" +
		"ingress-allowed 10.244.1.3 . 10.244.4.9 . tcp . 9000-9100  # shop/web ingress[0]\n" +
		"ingress-pods 10.244.1.2 → " + chain1 + "  # shop/web-1 isolated for ingress by shop/web\n" +
		"ingress-pods 10.244.1.3 → " + chain2 + "  # shop/web-2 isolated for ingress by shop/web\n"
	if got != want {
		t.Errorf("node-1's rules:\n%s\nwant\n%s", got, want)
	}
	// Node 2 isolates web-3 only; a node without web pods has nothing.
	if got := Build("node-2", State{Pods: pods, Policies: []*networking.NetworkPolicy{np}}).String(); strings.Count(got, "ingress-pods") != 1 || !strings.Contains(got, "10.244.2.2 → ") {
		t.Errorf("node-2's rules:\n%s", got)
	}
	if got := Build("node-3", State{Pods: pods, Policies: []*networking.NetworkPolicy{np}}).String(); got != "" {
		t.Errorf("node-3 has no web pod but got rules:\n%s", got)
	}
}

// Overlapping rules, of one policy or several, become disjoint elements
// (the kernel refuses overlapping ones) that allow exactly the union.
func TestOverlappingRulesBecomeDisjoint(t *testing.T) {
	nps := []*networking.NetworkPolicy{
		policy(t, "metadata: {namespace: ns, name: wide}\nspec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/24}}], ports: [{port: 80, endPort: 90}]}]}"),
		policy(t, "metadata: {namespace: ns, name: narrow}\nspec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 10.0.0.128/25}}, {ipBlock: {cidr: 10.0.1.0/24}}], ports: [{port: 85}, {port: 85, protocol: UDP}]}]}"),
		policy(t, "metadata: {namespace: ns, name: any}\nspec: {podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 192.0.2.1/32}}]}]}"),
	}
	got := Build("n", State{Pods: []*core.Pod{pod("ns", "a", "n", "10.244.0.2", nil)}, Policies: nps}).String()
	want := "" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . 0-5 . 0-65535  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . tcp . 0-79  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 10.0.0.0-10.0.0.255 . tcp . 80-84  # ns/wide ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . tcp . 80-84  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 10.0.0.0-10.0.1.255 . tcp . 85  # ns/narrow ingress[0]; ns/wide ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . tcp . 85  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 10.0.0.0-10.0.0.255 . tcp . 86-90  # ns/wide ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . tcp . 86-90  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . tcp . 91-65535  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . 7-16 . 0-65535  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . udp . 0-84  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 10.0.0.128-10.0.1.255 . udp . 85  # ns/narrow ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . udp . 85  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . udp . 86-65535  # ns/any ingress[0]\n" +
		"ingress-allowed 10.244.0.2 . 192.0.2.1 . 18-255 . 0-65535  # ns/any ingress[0]\n" +
		"ingress-pods 10.244.0.2 → ingress-" + hash("ns/a") + "  # ns/a isolated for ingress by ns/any, ns/narrow, ns/wide\n"
	if got != want {
		t.Errorf("rules:\n%s\nwant\n%s", got, want)
	}
}

// ipBlocks become ranges without their exceptions; peers that choose
// nobody allow nothing (the pod is still isolated).
func TestIPBlocksLessTheirExceptions(t *testing.T) {
	for _, tc := range []struct {
		peers string
		want  string
	}{
		{"[{ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16, 10.3.0.0/16]}}]", "10.0.0.0-10.0.255.255, 10.2.0.0-10.2.255.255, 10.4.0.0-10.255.255.255"},
		{"[{ipBlock: {cidr: 0.0.0.0/0, except: [10.0.0.0/8]}}]", "0.0.0.0-9.255.255.255, 11.0.0.0-255.255.255.255"},
		{"[{ipBlock: {cidr: 192.0.2.7/32}}, {ipBlock: {cidr: 192.0.2.8/31}}]", "192.0.2.7-192.0.2.9"},
		{"[{ipBlock: {cidr: 192.0.2.0/24, except: [192.0.2.0/25]}}, {ipBlock: {cidr: 192.0.2.64/26}}]", "192.0.2.64-192.0.2.255"},
		{"[{ipBlock: {cidr: \"2001:db8::/32\"}}]", ""},
		{"[{podSelector: {matchLabels: {nobody: here}}}]", ""},
	} {
		np := policy(t, "metadata: {namespace: ns, name: p}\nspec: {podSelector: {}, policyTypes: [Egress], egress: [{to: "+tc.peers+"}]}")
		rs := Build("n", State{Pods: []*core.Pod{pod("ns", "a", "n", "10.244.0.2", nil)}, Policies: []*networking.NetworkPolicy{np}})
		var peers []string
		for _, el := range rs.Allowed[dirEgress] {
			peers = append(peers, strings.Split(el.Key, " . ")[1])
		}
		if got := strings.Join(peers, ", "); got != tc.want || rs.Isolated[dirEgress]["10.244.0.2"] == "" {
			t.Errorf("%s: peers %q, want %q (isolated: %v)", tc.peers, got, tc.want, rs.Isolated)
		}
	}
}

// The cluster DNS the agents serve counts as kube-system pods labelled
// k8s-app=kube-dns, so the usual CoreDNS egress rule allows it (on its
// named port too); other slices are not pods.
func TestClusterDNSIsAKubeDNSPeer(t *testing.T) {
	name, tcpName, port := "dns", "dns-tcp", int32(53)
	udp, tcp := core.ProtocolUDP, core.ProtocolTCP
	slice := func(ns, svc, managedBy, ip string) *discovery.EndpointSlice {
		return &discovery.EndpointSlice{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: svc + "-x", Labels: map[string]string{discovery.LabelServiceName: svc, discovery.LabelManagedBy: managedBy}},
			Endpoints: []discovery.Endpoint{{Addresses: []string{ip}}},
			Ports:     []discovery.EndpointPort{{Name: &name, Protocol: &udp, Port: &port}, {Name: &tcpName, Protocol: &tcp, Port: &port}}}
	}
	extra := DNSEndpoints([]*discovery.EndpointSlice{slice("kube-system", "kube-dns", "kobune-agent", "10.0.0.11"),
		slice("kube-system", "kube-dns", "someone-else", "10.0.0.99"), slice("default", "kube-dns", "kobune-agent", "10.0.0.98")}, "kobune-agent")
	if len(extra) != 1 || extra[0].IP.String() != "10.0.0.11" {
		t.Fatalf("DNS endpoints %v, want the agent's 10.0.0.11 only", extra)
	}
	np := policy(t, `metadata: {namespace: app, name: dns}
spec: {podSelector: {}, policyTypes: [Egress], egress: [{to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}, podSelector: {matchLabels: {k8s-app: kube-dns}}}], ports: [{port: dns, protocol: UDP}, {port: dns-tcp}]}]}`)
	rs := Build("n", State{Pods: []*core.Pod{pod("app", "a", "n", "10.244.0.2", nil)}, PseudoPods: extra, Policies: []*networking.NetworkPolicy{np},
		Namespaces: []*core.Namespace{{ObjectMeta: meta.ObjectMeta{Name: "kube-system", Labels: map[string]string{core.LabelMetadataName: "kube-system"}}}}})
	text := rs.String()
	for _, want := range []string{"egress-allowed 10.244.0.2 . 10.0.0.11 . tcp . 53  # app/dns egress[0]", "egress-allowed 10.244.0.2 . 10.0.0.11 . udp . 53  # app/dns egress[0]"} {
		if !strings.Contains(text, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "egress-allowed") != 2 {
		t.Errorf("ruleset allows more than the DNS:\n%s", text)
	}
}

// Sync loads only when the table would change.
func TestSyncLoadsOnlyChanges(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, Table)
	e := New("n", fake)
	st := State{Pods: []*core.Pod{pod("ns", "a", "n", "10.244.0.2", nil)}}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := e.Sync(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	first := fake.LastTransaction
	if err := e.Sync(ctx, st); err != nil || fake.LastTransaction != first {
		t.Fatalf("an unchanged state was loaded again (err %v)", err)
	}
	st.Policies = []*networking.NetworkPolicy{policy(t, "metadata: {namespace: ns, name: deny}\nspec: {podSelector: {}}")}
	if err := e.Sync(ctx, st); err != nil {
		t.Fatal(err)
	}
	if fake.LastTransaction == first || !strings.Contains(fake.LastTransaction.String(), "10.244.0.2 : goto ingress-") {
		t.Fatalf("the new policy was not loaded:\n%s", fake.LastTransaction)
	}
}
