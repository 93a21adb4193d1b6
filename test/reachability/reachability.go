// Package reachability is the NetworkPolicy reachability model of
// Kubernetes' own network-policy e2e tests, shared by the three places
// that hold Kobune to it: the verdict model (api/networking.Decide), the
// node's nftables rules loaded into a kernel (agent/netpol) and the lab
// (test/e2e). Namespaces x, y, z each hold pods a, b, c that serve ports
// 80 and 81 over TCP and UDP on named ports serve-<port>-<proto>; each
// case is a set of policies and the expected 9 × 9 truth table for one
// protocol and port, written out by hand in cases.yaml.
package reachability

import (
	_ "embed"
	"fmt"
	"net/netip"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/networking"
)

// Namespaces and Pods of the model, in the order of the tables' rows and
// columns.
var (
	Namespaces = []string{"x", "y", "z"}
	Pods       = []string{"a", "b", "c"}
	Ports      = []int32{80, 81}
	Protocols  = []string{"TCP", "UDP"}
)

// ModelIP is the address the model gives pod ns/pod: 10.244.<1,2,3>.<10,11,12>
// (x, y, z on their own /24 each, so an ipBlock can name a namespace).
func ModelIP(ns, pod string) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("10.244.%d.%d", strings.Index("xyz", ns)+1, strings.Index("abc", pod)+10))
}

// NamedPorts are the container ports every model pod declares.
func NamedPorts() []networking.NamedPort {
	var out []networking.NamedPort
	for _, port := range Ports {
		for _, proto := range Protocols {
			out = append(out, networking.NamedPort{Name: PortName(port, proto), Protocol: proto, Port: port})
		}
	}
	return out
}

// PortName is the name of a model pod's container port.
func PortName(port int32, proto string) string {
	return fmt.Sprintf("serve-%d-%s", port, strings.ToLower(proto))
}

// Labels are a model pod's labels and a model namespace's.
func Labels(pod string) map[string]string { return map[string]string{"pod": pod} }

// NamespaceLabels are the model namespaces' labels (ns: <name>, besides
// the kubernetes.io/metadata.name every namespace has).
func NamespaceLabels(ns string) map[string]string {
	return map[string]string{"ns": ns, "kubernetes.io/metadata.name": ns}
}

// Case is one policy case.
type Case struct {
	Name string `json:"name"`
	// Policies are NetworkPolicies in YAML; $Y_PODS stands for the
	// CIDRs that cover exactly namespace y's pods.
	Policies []string `json:"policies"`
	Protocol string   `json:"protocol"`
	Port     int32    `json:"port"`
	// Want is the truth table: a row per source (x/a, x/b, ... z/c), a
	// group of three columns per destination namespace, '.' for a
	// connection that passes, 'X' for one that is dropped.
	Want string `json:"want"`
}

//go:embed cases.yaml
var casesYAML []byte

// Cases are the model's cases.
func Cases() ([]Case, error) {
	var out []Case
	if err := yaml.UnmarshalStrict(casesYAML, &out); err != nil {
		return nil, fmt.Errorf("cases.yaml: %w", err)
	}
	for i := range out {
		out[i].Want = Normalize(out[i].Want)
	}
	return out, nil
}

// Build decodes the case's policies, defaulted and validated, with
// yPods standing for $Y_PODS (a flow list's items: "10.244.2.0/24" or
// "10.244.2.5/32, 10.244.1.7/32").
func (c Case) Build(yPods string) ([]*networking.NetworkPolicy, error) {
	var out []*networking.NetworkPolicy
	for i, d := range c.Policies {
		np := &networking.NetworkPolicy{}
		if err := yaml.UnmarshalStrict([]byte(strings.ReplaceAll(d, "$Y_PODS", yPods)), np); err != nil {
			return nil, fmt.Errorf("case %q policy %d: %w", c.Name, i, err)
		}
		if np.Name == "" {
			np.Name = fmt.Sprint("p", i)
		}
		if strings.Index("xyz", np.Namespace) < 0 || len(np.Namespace) != 1 {
			// An unquoted y reads as a boolean in YAML.
			return nil, fmt.Errorf("case %q policy %d: namespace %q is not one of the model's (quote \"y\")", c.Name, i, np.Namespace)
		}
		networking.SetDefaultsNetworkPolicy(np)
		if err := networking.ValidateNetworkPolicy(np).ToError(); err != nil {
			return nil, fmt.Errorf("case %q policy %d: %w", c.Name, i, err)
		}
		out = append(out, np)
	}
	return out, nil
}

// Table writes a truth table from allowed(source, destination), each
// "ns/pod".
func Table(allowed func(src, dst string) bool) string {
	var b strings.Builder
	for _, sns := range Namespaces {
		for _, sp := range Pods {
			var groups []string
			for _, dns := range Namespaces {
				var g strings.Builder
				for _, dp := range Pods {
					if allowed(sns+"/"+sp, dns+"/"+dp) {
						g.WriteByte('.')
					} else {
						g.WriteByte('X')
					}
				}
				groups = append(groups, g.String())
			}
			b.WriteString(strings.Join(groups, " ") + "\n")
		}
	}
	return b.String()
}

// Normalize drops blank lines and spaces at the ends of lines.
func Normalize(t string) string {
	var out []string
	for _, l := range strings.Split(t, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// Diff marks the cells where got differs from want ('!' in a copy of
// got), for a failure message a person can read.
func Diff(got, want string) string {
	g, w := []byte(got), []byte(want)
	if len(g) != len(w) {
		return got
	}
	for i := range g {
		if g[i] != w[i] {
			g[i] = '!'
		}
	}
	return string(g)
}
