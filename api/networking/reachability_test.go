package networking_test

import (
	"testing"

	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/test/reachability"
)

// TestReachabilityModel: the verdict model gives, for every case of the
// reachability model (test/reachability/cases.yaml), the truth table
// written there by hand — the same tables the node's rules are held to in
// a kernel (agent/netpol) and on the lab (test/e2e).
func TestReachabilityModel(t *testing.T) {
	cases, err := reachability.Cases()
	if err != nil {
		t.Fatal(err)
	}
	nsLabels := map[string]map[string]string{}
	for _, ns := range reachability.Namespaces {
		nsLabels[ns] = reachability.NamespaceLabels(ns)
	}
	endpoint := func(ref string) networking.Endpoint {
		ns, pod := ref[:1], ref[2:]
		return networking.Endpoint{Pod: true, Namespace: ns, Name: pod, Labels: reachability.Labels(pod),
			IP: reachability.ModelIP(ns, pod), Ports: reachability.NamedPorts()}
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			nps, err := tc.Build("10.244.2.0/24")
			if err != nil {
				t.Fatal(err)
			}
			got := reachability.Table(func(src, dst string) bool {
				c := networking.Connection{Src: endpoint(src), Dst: endpoint(dst), Protocol: tc.Protocol, Port: tc.Port}
				return networking.Decide(nps, nsLabels, c).Allowed()
			})
			if got != tc.Want {
				t.Errorf("%s %d:\ngot (! where it differs)\n%swant\n%s", tc.Protocol, tc.Port, reachability.Diff(got, tc.Want), tc.Want)
			}
		})
	}
}
