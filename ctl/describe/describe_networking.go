package describe

import (
	"fmt"
	"io"
	"strings"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/api/printers"
)

// describeNetworkPolicy prints a policy as kubectl describes one: which
// pods it selects, then per direction it restricts each rule's ports and
// peers, in words.
func describeNetworkPolicy(w io.Writer, np *networking.NetworkPolicy) {
	fmt.Fprintln(w, "Spec:")
	sel := selectorString(&np.Spec.PodSelector)
	if sel == "<none>" {
		sel = "<none> (Allowing the specific traffic to all pods in this namespace)"
	}
	fmt.Fprintf(w, "  PodSelector:\t%s\n", sel)
	restricts := func(dir string) bool {
		for _, t := range np.Spec.PolicyTypes {
			if t == dir {
				return true
			}
		}
		return false
	}
	if restricts(networking.PolicyTypeIngress) {
		fmt.Fprintln(w, "  Allowing ingress traffic:")
		if len(np.Spec.Ingress) == 0 {
			fmt.Fprintln(w, "    <none> (Selected pods are isolated for ingress connectivity)")
		}
		for i, r := range np.Spec.Ingress {
			if i > 0 {
				fmt.Fprintln(w, "    ----------")
			}
			describePolicyPorts(w, r.Ports)
			describePolicyPeers(w, "From", r.From, "traffic not restricted by source")
		}
	} else {
		fmt.Fprintln(w, "  Not affecting ingress traffic")
	}
	if restricts(networking.PolicyTypeEgress) {
		fmt.Fprintln(w, "  Allowing egress traffic:")
		if len(np.Spec.Egress) == 0 {
			fmt.Fprintln(w, "    <none> (Selected pods are isolated for egress connectivity)")
		}
		for i, r := range np.Spec.Egress {
			if i > 0 {
				fmt.Fprintln(w, "    ----------")
			}
			describePolicyPorts(w, r.Ports)
			describePolicyPeers(w, "To", r.To, "traffic not restricted by destination")
		}
	} else {
		fmt.Fprintln(w, "  Not affecting egress traffic")
	}
	fmt.Fprintf(w, "  Policy Types:\t%s\n", strings.Join(np.Spec.PolicyTypes, ", "))
}

func describePolicyPorts(w io.Writer, ports []networking.NetworkPolicyPort) {
	if len(ports) == 0 {
		fmt.Fprintln(w, "    To Port: <any> (traffic allowed to all ports)")
		return
	}
	for _, p := range ports {
		proto := "TCP"
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		port := "<any>"
		if p.Port != nil {
			port = p.Port.String()
			if p.EndPort != nil {
				port += fmt.Sprintf("-%d", *p.EndPort)
			}
		}
		fmt.Fprintf(w, "    To Port: %s/%s\n", port, proto)
	}
}

func describePolicyPeers(w io.Writer, label string, peers []networking.NetworkPolicyPeer, unrestricted string) {
	if len(peers) == 0 {
		fmt.Fprintf(w, "    %s: <any> (%s)\n", label, unrestricted)
		return
	}
	for _, p := range peers {
		fmt.Fprintf(w, "    %s:\n", label)
		if p.NamespaceSelector != nil {
			fmt.Fprintf(w, "      NamespaceSelector: %s\n", allOrSelector(p.NamespaceSelector))
		}
		if p.PodSelector != nil {
			fmt.Fprintf(w, "      PodSelector: %s\n", allOrSelector(p.PodSelector))
		}
		if b := p.IPBlock; b != nil {
			fmt.Fprintln(w, "      IPBlock:")
			fmt.Fprintf(w, "        CIDR: %s\n", b.CIDR)
			fmt.Fprintf(w, "        Except: %s\n", strings.Join(b.Except, ", "))
		}
	}
}

// allOrSelector prints an empty selector as what it selects: everything.
func allOrSelector(ls *meta.LabelSelector) string {
	if s := selectorString(ls); s != "<none>" {
		return s
	}
	return "<all>"
}

// describeIngress prints an Ingress as kubectl describes one: its class,
// default backend, TLS and a table of host, path and backend.
func describeIngress(w io.Writer, in *networking.Ingress) {
	class := "<none>"
	if in.Spec.IngressClassName != nil {
		class = *in.Spec.IngressClassName
	}
	fmt.Fprintf(w, "Ingress Class:\t%s\n", class)
	var addrs []string
	for _, a := range in.Status.LoadBalancer.Ingress {
		addrs = append(addrs, a.IP+a.Hostname)
	}
	fmt.Fprintf(w, "Address:\t%s\n", strings.Join(addrs, ","))
	backend := func(b *networking.IngressBackend) string {
		if b == nil || b.Service == nil {
			return "<default>"
		}
		port := b.Service.Port.Name
		if port == "" {
			port = fmt.Sprint(b.Service.Port.Number)
		}
		return b.Service.Name + ":" + port
	}
	fmt.Fprintf(w, "Default backend:\t%s\n", backend(in.Spec.DefaultBackend))
	if len(in.Spec.TLS) > 0 {
		fmt.Fprintln(w, "TLS:")
		for _, t := range in.Spec.TLS {
			fmt.Fprintf(w, "  %s terminates %s\n", printers.None(t.SecretName), strings.Join(t.Hosts, ","))
		}
	}
	fmt.Fprintln(w, "Rules:")
	fmt.Fprintln(w, "  Host\tPath\tBackends")
	fmt.Fprintln(w, "  ----\t----\t--------")
	if len(in.Spec.Rules) == 0 {
		fmt.Fprintf(w, "  *\t*\t%s\n", backend(in.Spec.DefaultBackend))
	}
	for _, r := range in.Spec.Rules {
		host := r.Host
		if host == "" {
			host = "*"
		}
		fmt.Fprintf(w, "  %s\t\n", host)
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			fmt.Fprintf(w, "  \t%s\t%s\n", p.Path, backend(&p.Backend))
		}
	}
}
