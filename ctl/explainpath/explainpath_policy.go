package explainpath

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// explainPolicy answers "may pod A reach B on this port?", B a pod or a
// Service, from the live objects and the nodes' rules: for a Service, the
// DNS name and cluster IP and each ready endpoint the node proxy may DNAT
// to (a connection goes to one of them); for each destination pod, the
// route between the nodes, each side's selecting policies, the rule that
// allows the connection or, when none does, the rule that is missing, and
// the rules the node's kernel holds for an isolated side (read by its
// agent). The verdict is the model's (api/networking.Decide), the one the
// agents' nftables rules are held to (agent/netpol, test/e2e).
func explainPolicy(o *cmdutil.Options, ctx context.Context, c *client.Client, from, to, toNamespace, protocol, portArg string) error {
	protocol = strings.ToUpper(protocol)
	if protocol != "TCP" && protocol != "UDP" && protocol != "SCTP" {
		return fmt.Errorf("--protocol %q: TCP, UDP or SCTP", protocol)
	}
	src, err := policyEndpoint(ctx, c, o.NamespaceOrDefault(), from)
	if err != nil {
		return err
	}
	if toNamespace == "" {
		toNamespace = o.NamespaceOrDefault()
	}
	typ, name, _ := strings.Cut(to, "/")
	var dsts []namedEndpoint
	var ports []int32
	header := ""
	switch typ {
	case "svc", "service", "services":
		svc, err := client.For[*core.Service](c).Get(ctx, toNamespace, name)
		if err != nil {
			return err
		}
		var steps []string
		dsts, ports, steps, err = serviceEndpoints(ctx, c, svc, portArg, protocol)
		if err != nil {
			return err
		}
		header = strings.Join(steps, "\n")
		// The node proxy's rules on the source's node, as its kernel has them.
		if src.node != "" && src.IP.IsValid() && svc.Spec.ClusterIP != core.ClusterIPNone && svc.Spec.ClusterIP != "" {
			if sp := servicePortOf(svc, portArg, protocol); sp != nil {
				hops, err := c.ServicePath(ctx, src.node, svc.Spec.ClusterIP, protocol, sp.Port, src.IP.String())
				if err != nil {
					header += fmt.Sprintf("\n  cannot read node %s's Service rules: %s", src.node, client.Message(err))
				} else {
					header += fmt.Sprintf("\n  node %s's Service rules (table ip kobune-proxy):", src.node)
					for _, h := range hops {
						header += "\n    " + h.Object
						for _, l := range h.Lines {
							header += "\n        " + l
						}
						if h.Explain != "" {
							header += "\n      → " + h.Explain
						}
					}
				}
			}
		}
	default:
		n, err := strconv.ParseInt(portArg, 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("--port %q: with --to pod/NAME, a port number from 1 to 65535", portArg)
		}
		dst, err := policyEndpoint(ctx, c, toNamespace, to)
		if err != nil {
			return err
		}
		dsts, ports = []namedEndpoint{dst}, []int32{int32(n)}
	}
	nps, nsLabels, err := policyState(ctx, c)
	if err != nil {
		return err
	}
	nodes, _, err := client.For[*core.Node](c).List(ctx, "", client.ListOptions{})
	if err != nil {
		return err
	}
	if header != "" {
		fmt.Fprintf(o.Out, "%s → %s\n", src.describe, header)
	}
	allowed := 0
	for i, dst := range dsts {
		if header != "" {
			fmt.Fprintf(o.Out, "\nEndpoint %d of %d:\n", i+1, len(dsts))
		}
		conn := networking.Connection{Src: src.Endpoint, Dst: dst.Endpoint, Protocol: protocol, Port: ports[i]}
		v := networking.Decide(nps, nsLabels, conn)
		if v.Allowed() {
			allowed++
		}
		explainConnection(o, ctx, c, src, dst, conn, v, nodes, nsLabels)
	}
	verdict := "allowed"
	switch {
	case len(dsts) == 0:
		verdict = "refused: the Service has no ready endpoint (the node proxy rejects the connection at once)"
	case allowed == 0:
		verdict = "denied"
	case allowed < len(dsts) || len(dsts) > 1:
		if allowed < len(dsts) {
			verdict = fmt.Sprintf("allowed to %d of %d endpoints: each new connection goes to one at random, so some fail", allowed, len(dsts))
		} else {
			verdict = fmt.Sprintf("allowed (to all %d endpoints)", len(dsts))
		}
	}
	fmt.Fprintf(o.Out, "Verdict: %s\n", verdict)
	return nil
}

// policyState is what a verdict is computed from: every NetworkPolicy and
// each namespace's labels.
func policyState(ctx context.Context, c *client.Client) ([]*networking.NetworkPolicy, map[string]map[string]string, error) {
	nps, _, err := client.For[*networking.NetworkPolicy](c).List(ctx, "", client.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	nss, _, err := client.For[*core.Namespace](c).List(ctx, "", client.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	nsLabels := map[string]map[string]string{}
	for _, n := range nss {
		nsLabels[n.Name] = n.Labels
	}
	return nps, nsLabels, nil
}

// explainConnection prints one source → pod connection: the route, each
// side's policies and, for an isolated side, its node's rules.
func explainConnection(o *cmdutil.Options, ctx context.Context, c *client.Client, src, dst namedEndpoint, conn networking.Connection, v networking.Verdict, nodes []*core.Node, nsLabels map[string]map[string]string) {
	fmt.Fprintf(o.Out, "%s → %s, port %d/%s\n", src.describe, dst.describe, conn.Port, conn.Protocol)
	fmt.Fprintf(o.Out, "  route: %s\n", route(src, dst, nodes))
	side := func(n int, what string, pod namedEndpoint, d networking.DirectionVerdict, dir string) {
		switch {
		case d.AllowedBy != "" && len(d.Selected) == 0: // loopback
			fmt.Fprintf(o.Out, "  %d. %s of %s: allowed: %s\n", n, what, pod.name, d.AllowedBy)
			return
		case len(d.Selected) == 0:
			fmt.Fprintf(o.Out, "  %d. %s of %s: no NetworkPolicy selects it for %s: not isolated, allowed\n", n, what, pod.name, strings.ToLower(dir))
			return
		case d.Allowed:
			fmt.Fprintf(o.Out, "  %d. %s of %s: selected by %s; allowed by %s\n", n, what, pod.name, strings.Join(d.Selected, ", "), d.AllowedBy)
		default:
			fmt.Fprintf(o.Out, "  %d. %s of %s: selected by %s; no rule of theirs allows this connection: denied\n", n, what, pod.name, strings.Join(d.Selected, ", "))
			fmt.Fprintf(o.Out, "     missing: %s\n", missingRule(dir, conn, nsLabels))
		}
		if pod.node == "" || !pod.IP.IsValid() {
			return
		}
		hops, err := c.PolicyPath(ctx, pod.node, pod.IP.String(), strings.ToLower(dir))
		if err != nil {
			fmt.Fprintf(o.Out, "     cannot read node %s's rules: %s\n", pod.node, client.Message(err))
			return
		}
		fmt.Fprintf(o.Out, "     node %s's rules (table ip kobune-netpol):\n", pod.node)
		for _, h := range hops {
			fmt.Fprintf(o.Out, "       %s\n", h.Object)
			for _, l := range h.Lines {
				fmt.Fprintf(o.Out, "           %s\n", l)
			}
		}
	}
	side(1, "Egress", src, v.Egress, networking.PolicyTypeEgress)
	side(2, "Ingress", dst, v.Ingress, networking.PolicyTypeIngress)
}

// route says how a packet goes from one pod's node to the other's: on
// one node's bridge, or routed to the other node by the pod CIDR route
// each agent installs (agent/network).
func route(src, dst namedEndpoint, nodes []*core.Node) string {
	switch {
	case src.node == "" || dst.node == "":
		return "unknown: a pod is not on a node yet"
	case src.name == dst.name:
		return "the pod's own address: loopback inside the pod, no node is involved"
	case src.node == dst.node:
		return fmt.Sprintf("both on node %s: across its bridge (judged in its forward hook)", src.node)
	}
	for _, n := range nodes {
		if n.Name != dst.node {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" {
				return fmt.Sprintf("node %s routes %s to node %s (%s); egress judged on %s, ingress on %s", src.node, n.Spec.PodCIDR, dst.node, a.Address, src.node, dst.node)
			}
		}
	}
	return fmt.Sprintf("from node %s to node %s", src.node, dst.node)
}

// servicePortOf is the Service's port named or numbered portArg (the only
// one, when portArg is empty) with the protocol.
func servicePortOf(svc *core.Service, portArg, protocol string) *core.ServicePort {
	for i, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		if ((portArg == "" && len(svc.Spec.Ports) == 1) || portArg == p.Name || portArg == strconv.Itoa(int(p.Port))) && proto == protocol {
			return &svc.Spec.Ports[i]
		}
	}
	return nil
}

// serviceEndpoints are the ready endpoint pods a connection to the
// Service's port may be DNATed to, each with its target port, and the
// steps that lead there (DNS, cluster IP, DNAT).
func serviceEndpoints(ctx context.Context, c *client.Client, svc *core.Service, portArg, protocol string) ([]namedEndpoint, []int32, []string, error) {
	sp := servicePortOf(svc, portArg, protocol)
	if sp == nil {
		return nil, nil, nil, fmt.Errorf("service %s/%s has no %s port %q (--port: its name or number)", svc.Namespace, svc.Name, protocol, portArg)
	}
	if svc.Spec.Type == core.ServiceTypeExternalName {
		return nil, nil, nil, fmt.Errorf("service %s/%s is an ExternalName (%s): no pod of the cluster is behind it", svc.Namespace, svc.Name, svc.Spec.ExternalName)
	}
	steps := []string{fmt.Sprintf("Service %s/%s port %d/%s", svc.Namespace, svc.Name, sp.Port, protocol),
		fmt.Sprintf("  DNS: %s.%s.svc answers %s", svc.Name, svc.Namespace, svc.Spec.ClusterIP)}
	if svc.Spec.ClusterIP == core.ClusterIPNone {
		steps[1] = fmt.Sprintf("  DNS: %s.%s.svc (headless) answers the ready pods' addresses; the client connects to one directly", svc.Name, svc.Namespace)
	} else {
		steps = append(steps, fmt.Sprintf("  the node proxy DNATs a new connection to %s:%d to one ready endpoint at random; NetworkPolicy judges it after the DNAT, against that pod", svc.Spec.ClusterIP, sp.Port))
	}
	slices, _, err := client.For[*discovery.EndpointSlice](c).List(ctx, svc.Namespace, client.ListOptions{LabelSelector: discovery.LabelServiceName + "=" + svc.Name})
	if err != nil {
		return nil, nil, nil, err
	}
	var out []namedEndpoint
	var ports []int32
	seen := map[string]bool{}
	for _, s := range slices {
		var port int32
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == sp.Name && p.Port != nil {
				port = *p.Port
			}
		}
		for _, e := range s.Endpoints {
			if port == 0 || e.TargetRef == nil || e.TargetRef.Kind != "Pod" || (e.Conditions.Ready != nil && !*e.Conditions.Ready) || seen[e.TargetRef.Name] {
				continue
			}
			seen[e.TargetRef.Name] = true
			dst, err := policyEndpoint(ctx, c, svc.Namespace, "pod/"+e.TargetRef.Name)
			if err != nil {
				continue // gone since the slice was written
			}
			out = append(out, dst)
			ports = append(ports, port)
		}
	}
	return out, ports, steps, nil
}

// policyEndpoint is a pod as a policy sees it.
type namedEndpoint struct {
	networking.Endpoint
	node, name, describe string
}

func policyEndpoint(ctx context.Context, c *client.Client, ns, ref string) (namedEndpoint, error) {
	typ, name, ok := strings.Cut(ref, "/")
	if !ok || (typ != "pod" && typ != "pods" && typ != "po") {
		return namedEndpoint{}, fmt.Errorf("want pod/NAME, not %q", ref)
	}
	p, err := client.For[*core.Pod](c).Get(ctx, ns, name)
	if err != nil {
		return namedEndpoint{}, err
	}
	e := networking.PodEndpoint(p)
	where := p.Status.PodIP
	if p.Spec.NodeName != "" {
		where += ", node " + p.Spec.NodeName
	}
	return namedEndpoint{Endpoint: e, node: p.Spec.NodeName, name: ns + "/" + name, describe: fmt.Sprintf("pod %s/%s (%s)", ns, name, strings.TrimPrefix(where, ", "))}, nil
}

// missingRule is the smallest rule that would allow the connection, as a
// user would add it to a policy that selects the pod.
func missingRule(dir string, c networking.Connection, nsLabels map[string]map[string]string) string {
	peer, self, key := c.Src, c.Dst, "from"
	if dir == networking.PolicyTypeEgress {
		peer, self, key = c.Dst, c.Src, "to"
	}
	var labels []string
	for k, v := range peer.Labels {
		labels = append(labels, fmt.Sprintf("%s: %s", k, v))
	}
	sort.Strings(labels)
	peerText := fmt.Sprintf("{podSelector: {matchLabels: {%s}}}", strings.Join(labels, ", "))
	if peer.Namespace != self.Namespace {
		peerText = fmt.Sprintf("{namespaceSelector: {matchLabels: {%s: %s}}, podSelector: {matchLabels: {%s}}}", core.LabelMetadataName, peer.Namespace, strings.Join(labels, ", "))
	}
	return fmt.Sprintf("an %s rule in a policy of namespace %s that selects %s/%s: {%s: [%s], ports: [{port: %d, protocol: %s}]}",
		strings.ToLower(dir), self.Namespace, self.Namespace, self.Name, key, peerText, c.Port, c.Protocol)
}
