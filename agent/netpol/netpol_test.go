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

// The rules for peers do not grow with the number of peers: 200 client
// pods are 200 addresses in one set (merged into ranges where adjacent),
// still one rule; pods with the same policies share one chain; pods of
// other nodes, host-network pods and finished pods are never isolated
// here, and the last two are no peers either.
func TestRulesDoNotGrowWithPeers(t *testing.T) {
	web := map[string]string{"app": "web"}
	pods := []*core.Pod{
		pod("shop", "web-1", "node-1", "10.244.1.2", web),
		pod("shop", "web-2", "node-1", "10.244.1.3", web),
		pod("shop", "web-3", "node-2", "10.244.2.2", web),
		pod("shop", "host", "node-1", "192.168.1.5", map[string]string{"role": "client"}, func(p *core.Pod) { p.Spec.HostNetwork = true }),
		pod("shop", "done", "node-1", "10.244.1.200", map[string]string{"role": "client"}, func(p *core.Pod) { p.Status.Phase = core.PodSucceeded }),
	}
	for i := 0; i < 200; i++ {
		pods = append(pods, pod("shop", fmt.Sprint("client-", i), "node-2", fmt.Sprintf("10.244.3.%d", i+1), map[string]string{"role": "client"}))
	}
	pods = append(pods, pod("shop", "odd", "node-2", "10.244.4.9", map[string]string{"role": "client"}))
	np := policy(t, "metadata: {namespace: shop, name: web}\nspec: {podSelector: {matchLabels: {app: web}}, ingress: [{from: [{podSelector: {matchLabels: {role: client}}}], ports: [{port: http}, {port: 9000, endPort: 9100}]}]}")
	rs := Build("node-1", State{Pods: pods, Policies: []*networking.NetworkPolicy{np}})
	chain := rs.Chains[policyChain(np, networking.PolicyTypeIngress)]
	if len(chain) != 2 {
		t.Fatalf("the policy's chain has %d rules, want 2 (one per port entry):\n%s", len(chain), rs)
	}
	set := strings.Fields(chain[0].Text)[2][1:]
	if got := strings.Join(rs.Sets[set], ", "); got != "10.244.3.1-10.244.3.200, 10.244.4.9" {
		t.Errorf("peer set %s = %s, want the 201 running clients as two ranges", set, got)
	}
	if want := "ip saddr @" + set + " ip daddr . meta l4proto . th dport @port-tcp-http accept"; chain[0].Text != want {
		t.Errorf("rule %q, want %q", chain[0].Text, want)
	}
	if want := "ip saddr @" + set + " meta l4proto tcp th dport 9000-9100 accept"; chain[1].Text != want {
		t.Errorf("rule %q, want %q", chain[1].Text, want)
	}
	if len(rs.Ingress) != 2 || rs.Ingress["10.244.1.2"] == "" || rs.Ingress["10.244.1.2"] != rs.Ingress["10.244.1.3"] {
		t.Errorf("isolated for ingress: %v, want web-1 and web-2 (node-1's) sharing one chain", rs.Ingress)
	}
	if len(rs.Egress) != 0 {
		t.Errorf("isolated for egress: %v, want none (an ingress policy)", rs.Egress)
	}
	// The named port's set: every pod with a port "http" (web-3 too).
	if got := strings.Join(rs.Sets["port-tcp-http"], ", "); !strings.Contains(got, "10.244.2.2 . tcp . 8080") || strings.Contains(got, "192.168.1.5") || strings.Contains(got, "10.244.1.200") {
		t.Errorf("named port set = %s", got)
	}
	// Node 2 isolates web-3 only.
	rs2 := Build("node-2", State{Pods: pods, Policies: []*networking.NetworkPolicy{np}})
	if len(rs2.Ingress) != 1 || rs2.Ingress["10.244.2.2"] == "" {
		t.Errorf("node-2 isolates %v, want only web-3", rs2.Ingress)
	}
	// A policy that selects nothing on the node leaves no chain there.
	rs3 := Build("node-3", State{Pods: pods, Policies: []*networking.NetworkPolicy{np}})
	if len(rs3.Chains) != 0 || len(rs3.Ingress) != 0 {
		t.Errorf("node-3 has no web pod but got rules:\n%s", rs3)
	}
}

// ipBlocks become ranges without their exceptions; an empty peer list
// (no pod matches) is an empty set, which matches nothing.
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
		var set string
		for name := range rs.Sets {
			set = name
		}
		if got := strings.Join(rs.Sets[set], ", "); got != tc.want {
			t.Errorf("%s: set %s = %q, want %q", tc.peers, set, got, tc.want)
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
spec: {podSelector: {}, policyTypes: [Egress], egress: [{to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}, podSelector: {matchLabels: {k8s-app: kube-dns}}}], ports: [{port: dns, protocol: UDP}]}]}`)
	rs := Build("n", State{Pods: []*core.Pod{pod("app", "a", "n", "10.244.0.2", nil)}, Extra: extra, Policies: []*networking.NetworkPolicy{np},
		Namespaces: []*core.Namespace{{ObjectMeta: meta.ObjectMeta{Name: "kube-system", Labels: map[string]string{core.LabelMetadataName: "kube-system"}}}}})
	text := rs.String()
	for _, want := range []string{"{ 10.0.0.11 }", "set port-udp-dns { 10.0.0.11 . udp . 53 }", "@port-udp-dns accept"} {
		if !strings.Contains(text, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, text)
		}
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
	if fake.LastTransaction == first || !strings.Contains(fake.LastTransaction.String(), "10.244.0.2 : jump ingress-") {
		t.Fatalf("the new policy was not loaded:\n%s", fake.LastTransaction)
	}
}
