package networking

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The reachability model of Kubernetes' network policy e2e tests:
// namespaces x, y, z, each with pods a, b, c, every pod serving 80 and 81
// over TCP and UDP on named ports serve-<port>-<proto>.
var (
	modelNamespaces = []string{"x", "y", "z"}
	modelPods       = []string{"a", "b", "c"}
)

func modelEndpoint(ns, pod string) Endpoint {
	e := Endpoint{Pod: true, Namespace: ns, Name: pod, Labels: map[string]string{"pod": pod},
		IP: netip.MustParseAddr(fmt.Sprintf("10.244.%d.%d", strings.Index("xyz", ns)+1, strings.Index("abc", pod)+10))}
	for _, port := range []int32{80, 81} {
		for _, proto := range []string{"TCP", "UDP"} {
			e.Ports = append(e.Ports, NamedPort{Name: fmt.Sprintf("serve-%d-%s", port, strings.ToLower(proto)), Protocol: proto, Port: port})
		}
	}
	return e
}

var modelNSLabels = map[string]map[string]string{"x": {"ns": "x"}, "y": {"ns": "y"}, "z": {"ns": "z"}}

// truthTable computes the 9 × 9 table for a port: a row per source, '.'
// where the connection passes and 'X' where it is dropped.
func truthTable(policies []*NetworkPolicy, proto string, port int32) string {
	var b strings.Builder
	for _, sns := range modelNamespaces {
		for _, sp := range modelPods {
			for _, dns := range modelNamespaces {
				for _, dp := range modelPods {
					c := Connection{Src: modelEndpoint(sns, sp), Dst: modelEndpoint(dns, dp), Protocol: proto, Port: port}
					if Decide(policies, modelNSLabels, c).Allowed() {
						b.WriteByte('.')
					} else {
						b.WriteByte('X')
					}
				}
				b.WriteByte(' ')
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func policies(t *testing.T, docs ...string) []*NetworkPolicy {
	t.Helper()
	var out []*NetworkPolicy
	for i, d := range docs {
		np := &NetworkPolicy{}
		if err := yaml.UnmarshalStrict([]byte(d), np); err != nil {
			t.Fatal(err)
		}
		if np.Name == "" {
			np.Name = fmt.Sprint("p", i)
		}
		SetDefaultsNetworkPolicy(np)
		if err := ValidateNetworkPolicy(np).ToError(); err != nil {
			t.Fatal(err)
		}
		out = append(out, np)
	}
	return out
}

// TestVerdictNamesThePolicies: a denied connection names the policies
// that select the pod and none that allows it; an allowed one names the
// rule; traffic from outside the pods is judged only by ipBlocks.
func TestVerdictNamesThePolicies(t *testing.T) {
	ps := policies(t, "metadata: {namespace: x, name: web}\nspec: {podSelector: {matchLabels: {pod: a}}, ingress: [{from: [{podSelector: {matchLabels: {pod: b}}}]}, {from: [{ipBlock: {cidr: 192.0.2.0/24}}], ports: [{port: 80}]}]}")
	v := Decide(ps, modelNSLabels, Connection{Src: modelEndpoint("x", "c"), Dst: modelEndpoint("x", "a"), Protocol: "TCP", Port: 80})
	if v.Allowed() || len(v.Ingress.Selected) != 1 || v.Ingress.Selected[0] != "x/web" || v.Ingress.AllowedBy != "" || !v.Egress.Allowed || len(v.Egress.Selected) != 0 {
		t.Errorf("x/c → x/a: %+v", v)
	}
	v = Decide(ps, modelNSLabels, Connection{Src: modelEndpoint("x", "b"), Dst: modelEndpoint("x", "a"), Protocol: "TCP", Port: 81})
	if !v.Allowed() || v.Ingress.AllowedBy != "x/web ingress[0]" {
		t.Errorf("x/b → x/a: %+v", v)
	}
	outside := Endpoint{IP: netip.MustParseAddr("192.0.2.7")}
	if v := Decide(ps, modelNSLabels, Connection{Src: outside, Dst: modelEndpoint("x", "a"), Protocol: "TCP", Port: 80}); !v.Allowed() || v.Ingress.AllowedBy != "x/web ingress[1]" {
		t.Errorf("192.0.2.7 → x/a:80: %+v", v)
	}
	if v := Decide(ps, modelNSLabels, Connection{Src: outside, Dst: modelEndpoint("x", "a"), Protocol: "TCP", Port: 81}); v.Allowed() {
		t.Errorf("192.0.2.7 → x/a:81 allowed: %+v", v)
	}
}
