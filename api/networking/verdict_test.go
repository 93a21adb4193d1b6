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

// Expected tables are written out by hand, as the e2e tests' are: rows
// are sources x/a x/b x/c y/a ... z/c, each group of three columns a
// destination namespace (a, b, c).
func TestReachabilityModel(t *testing.T) {
	open := strings.Repeat("... ... ... \n", 9)
	for _, tc := range []struct {
		name     string
		policies []string
		proto    string
		port     int32
		want     string
	}{
		{"no policy", nil, "TCP", 80, open},
		{"default deny ingress in x", []string{"metadata: {namespace: x}\nspec: {podSelector: {}}"}, "TCP", 80, "" +
			".XX ... ... \n" +
			"X.X ... ... \n" +
			"XX. ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n"},
		{"default deny egress in x", []string{"metadata: {namespace: x}\nspec: {podSelector: {}, policyTypes: [Egress]}"}, "TCP", 80, "" +
			".XX XXX XXX \n" +
			"X.X XXX XXX \n" +
			"XX. XXX XXX \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n"},
		{"allow from the same namespace", []string{"metadata: {namespace: x}\nspec: {podSelector: {}, ingress: [{from: [{podSelector: {}}]}]}"}, "TCP", 80, "" +
			"... ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n"},
		{"allow from namespace y by label", []string{"metadata: {namespace: x}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {ns: \"y\"}}}]}]}"}, "TCP", 80, "" +
			".XX ... ... \n" +
			"X.X ... ... \n" +
			"XX. ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n"},
		{"pod and namespace selector in one peer (AND)", []string{"metadata: {namespace: x}\nspec: {podSelector: {matchLabels: {pod: a}}, ingress: [{from: [{namespaceSelector: {matchLabels: {ns: \"y\"}}, podSelector: {matchLabels: {pod: b}}}]}]}"}, "TCP", 80, "" +
			"... ... ... \n" +
			"X.. ... ... \n" +
			"X.. ... ... \n" +
			"X.. ... ... \n" +
			"... ... ... \n" +
			"X.. ... ... \n" +
			"X.. ... ... \n" +
			"X.. ... ... \n" +
			"X.. ... ... \n"},
		{"the two selectors as two peers (OR)", []string{"metadata: {namespace: x}\nspec: {podSelector: {matchLabels: {pod: a}}, ingress: [{from: [{namespaceSelector: {matchLabels: {ns: \"y\"}}}, {podSelector: {matchLabels: {pod: b}}}]}]}"}, "TCP", 80, "" +
			"... ... ... \n" +
			"... ... ... \n" +
			"X.. ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"X.. ... ... \n" +
			"X.. ... ... \n" +
			"X.. ... ... \n"},
		{"egress to an ipBlock except namespace y's addresses", []string{"metadata: {namespace: x}\nspec: {podSelector: {matchLabels: {pod: a}}, policyTypes: [Egress], egress: [{to: [{ipBlock: {cidr: 10.244.0.0/16, except: [10.244.2.0/24]}}]}]}"}, "TCP", 80, "" +
			"... XXX ... \n" +
			strings.Repeat("... ... ... \n", 8)},
		{"a named port allows 80", []string{"metadata: {namespace: x}\nspec: {podSelector: {matchLabels: {pod: a}}, ingress: [{ports: [{port: serve-80-tcp}]}]}"}, "TCP", 80, open},
		{"a named port denies 81", []string{"metadata: {namespace: x}\nspec: {podSelector: {matchLabels: {pod: a}}, ingress: [{ports: [{port: serve-80-tcp}]}]}"}, "TCP", 81, "" +
			"... ... ... \n" +
			strings.Repeat("X.. ... ... \n", 8)},
		{"a named TCP port does not allow UDP", []string{"metadata: {namespace: x}\nspec: {podSelector: {matchLabels: {pod: a}}, ingress: [{ports: [{port: serve-80-tcp}]}]}"}, "UDP", 80, "" +
			"... ... ... \n" +
			strings.Repeat("X.. ... ... \n", 8)},
		{"endPort range 80-81 allows 81", []string{"metadata: {namespace: x}\nspec: {podSelector: {}, ingress: [{ports: [{port: 80, endPort: 81}]}]}"}, "TCP", 81, open},
		{"endPort range 81-82 denies 80", []string{"metadata: {namespace: x}\nspec: {podSelector: {}, ingress: [{ports: [{port: 81, endPort: 82}]}]}"}, "TCP", 80, "" +
			".XX ... ... \n" +
			"X.X ... ... \n" +
			"XX. ... ... \n" +
			strings.Repeat("XXX ... ... \n", 6)},
		{"egress allowing only DNS", []string{"metadata: {namespace: x}\nspec: {podSelector: {}, policyTypes: [Egress], egress: [{ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]}]}"}, "TCP", 80, "" +
			".XX XXX XXX \n" +
			"X.X XXX XXX \n" +
			"XX. XXX XXX \n" +
			strings.Repeat("... ... ... \n", 6)},
		{"policies add up", []string{
			"metadata: {namespace: x, name: from-y}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {ns: \"y\"}}}]}]}",
			"metadata: {namespace: x, name: from-z-c}\nspec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {matchLabels: {ns: z}}, podSelector: {matchLabels: {pod: c}}}]}]}"}, "TCP", 80, "" +
			".XX ... ... \n" +
			"X.X ... ... \n" +
			"XX. ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"... ... ... \n" +
			"XXX ... ... \n" +
			"XXX ... ... \n" +
			"... ... ... \n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := truthTable(policies(t, tc.policies...), tc.proto, tc.port); got != tc.want {
				t.Errorf("%s %d:\ngot\n%swant\n%s", tc.proto, tc.port, got, tc.want)
			}
		})
	}
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
