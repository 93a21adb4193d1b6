package explainpath

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// explainIngress follows a request through an Ingress: the class and
// the controller that serves it, the rule that matches the host and path
// (the controller's own matching, api/networking.BuildRoutes), the TLS
// Secret for the host, the Service port and its ready endpoints, and for
// each endpoint whether the NetworkPolicies let the controller reach it.
// kobune-ingress runs on the nodes' host network, so its connections
// come from a node's address: to a pod on its own node they are the
// node's own (never judged); to a pod on another node they are judged by
// that pod's ingress policies like any address outside the pods (only an
// ipBlock peer allows them).
func explainIngress(o *cmdutil.Options, ctx context.Context, c *client.Client, name, host, path string) error {
	ns := o.NamespaceOrDefault()
	in, err := client.For[*networking.Ingress](c).Get(ctx, ns, name)
	if err != nil {
		return err
	}
	class := "<none>"
	if in.Spec.IngressClassName != nil {
		class = *in.Spec.IngressClassName
		if ic, err := client.For[*networking.IngressClass](c).Get(ctx, "", class); err == nil {
			class += " (controller " + ic.Spec.Controller + ")"
		} else {
			class += " (no such IngressClass: no controller serves this Ingress)"
		}
	}
	var addrs []string
	for _, a := range in.Status.LoadBalancer.Ingress {
		addrs = append(addrs, a.IP+a.Hostname)
	}
	fmt.Fprintf(o.Out, "Ingress %s/%s, class %s, served at %s\n", ns, name, class, orNone(strings.Join(addrs, ", ")))
	if host == "" {
		for _, r := range in.Spec.Rules {
			if r.Host != "" {
				host = r.Host
				break
			}
		}
	}
	if path == "" {
		path = "/"
	}
	scheme := "http"
	routes := networking.BuildRoutes([]*networking.Ingress{in})
	if secret, ok := tlsSecretFor(routes, host); ok {
		scheme = "https"
		fmt.Fprintf(o.Out, "  TLS: %s is served with the certificate of Secret %s (chosen by SNI; plain HTTP is served too)\n", host, secret)
	}
	fmt.Fprintf(o.Out, "  request: %s://%s%s\n", scheme, host, path)
	r, ok := routes.MatchRoute(host, path)
	if !ok {
		fmt.Fprintf(o.Out, "  no rule matches and there is no default backend: the controller answers 404\n")
		return nil
	}
	if r.Default {
		fmt.Fprintf(o.Out, "  no rule matches: the default backend, Service %s\n", r.Backend)
	} else {
		h := r.Host
		if h == "" {
			h = "any host"
		}
		fmt.Fprintf(o.Out, "  rule: host %s, path %s (%s) → Service %s\n", h, r.Path, r.PathType, r.Backend)
	}
	svc, err := client.For[*core.Service](c).Get(ctx, ns, r.Backend.Service)
	if err != nil {
		fmt.Fprintf(o.Out, "  Service %s/%s: %s: the controller answers 503\n", ns, r.Backend.Service, client.Message(err))
		return nil
	}
	portArg := r.Backend.Port.Name
	if portArg == "" {
		portArg = strconv.Itoa(int(r.Backend.Port.Number))
	}
	dsts, ports, _, err := serviceEndpoints(ctx, c, svc, portArg, "TCP")
	if err != nil {
		return err
	}
	if len(dsts) == 0 {
		fmt.Fprintf(o.Out, "  Service %s has no ready endpoint: the controller answers 503\n", r.Backend)
		return nil
	}
	fmt.Fprintf(o.Out, "  the controller sends each request to the next of %d ready endpoints (round robin), straight to the pod (no Service DNAT)\n", len(dsts))
	// The nodes the controller answers on, by address.
	nodes, _, err := client.For[*core.Node](c).List(ctx, "", client.ListOptions{})
	if err != nil {
		return err
	}
	nodeOf := map[string]string{}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				nodeOf[a.Address] = n.Name
			}
		}
	}
	nps, nsLabels, err := policyState(ctx, c)
	if err != nil {
		return err
	}
	reaches := map[string]int{} // controller address → endpoints it may reach
	for i, dst := range dsts {
		fmt.Fprintf(o.Out, "  endpoint %d: %s, port %d\n", i+1, dst.describe, ports[i])
		for _, a := range addrs {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				continue
			}
			from := nodeOf[a]
			if from == "" {
				from = a
			}
			if from == dst.node {
				reaches[a]++
				fmt.Fprintf(o.Out, "     from the controller on %s: the node's own connection to its pod: NetworkPolicy does not judge it\n", from)
				continue
			}
			conn := networking.Connection{Src: networking.Endpoint{IP: ip}, Dst: dst.Endpoint, Protocol: "TCP", Port: ports[i]}
			v := networking.Decide(nps, nsLabels, conn).Ingress
			if v.Allowed {
				reaches[a]++
			}
			switch {
			case len(v.Selected) == 0:
				fmt.Fprintf(o.Out, "     from the controller on %s (%s): %s is not isolated for ingress: allowed\n", from, a, dst.name)
			case v.Allowed:
				fmt.Fprintf(o.Out, "     from the controller on %s (%s): allowed by %s\n", from, a, v.AllowedBy)
			default:
				fmt.Fprintf(o.Out, "     from the controller on %s (%s): denied: %s selected by %s, and no rule allows %s (the controller uses the node's host network, so only an ipBlock peer can: {from: [{ipBlock: {cidr: %s/32}}]})\n",
					from, a, dst.name, strings.Join(v.Selected, ", "), a, a)
			}
		}
	}
	all, none := true, false
	for _, a := range addrs {
		n := reaches[a]
		from := nodeOf[a]
		if from == "" {
			from = a
		}
		fmt.Fprintf(o.Out, "  the controller on %s may reach %d of %d endpoints\n", from, n, len(dsts))
		all = all && n == len(dsts)
		none = none || n == 0
	}
	switch {
	case all:
		fmt.Fprintf(o.Out, "Verdict: served by %s\n", r.Backend)
	case none:
		fmt.Fprintf(o.Out, "Verdict: requests that reach a controller which may reach no endpoint fail (502 after its connection attempts time out)\n")
	default:
		fmt.Fprintf(o.Out, "Verdict: served, slowly: a connection the policies drop times out (2 s) before the controller tries the next endpoint\n")
	}
	return nil
}

// tlsSecretFor is the TLS Secret the controller picks for host by SNI.
func tlsSecretFor(r *networking.Routes, host string) (string, bool) {
	if s, ok := r.TLS[host]; ok {
		return s, true
	}
	if i := strings.IndexByte(host, '.'); i > 0 {
		if s, ok := r.TLS["*"+host[i:]]; ok {
			return s, true
		}
	}
	return "", false
}

func orNone(s string) string {
	if s == "" {
		return "<no address yet: no controller has taken it>"
	}
	return s
}
