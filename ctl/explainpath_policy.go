package ctl

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/client"
)

// explainPolicy answers "may pod A reach pod B on this port?" from the
// live NetworkPolicies, pods and namespaces: each side's selecting
// policies, the rule that allows the connection, or, when none does, the
// rule that is missing. It is the verdict Kubernetes specifies, computed
// by the same model (api/networking.Decide) the agents' nftables rules are
// held to (agent/netpol, test/e2e's reachability test).
func (o *Options) explainPolicy(ctx context.Context, c *client.Client, from, to, toNamespace, protocol string, port int32) error {
	protocol = strings.ToUpper(protocol)
	if protocol != "TCP" && protocol != "UDP" && protocol != "SCTP" {
		return fmt.Errorf("--protocol %q: TCP, UDP or SCTP", protocol)
	}
	src, err := policyEndpoint(ctx, c, o.namespaceOrDefault(), from)
	if err != nil {
		return err
	}
	if toNamespace == "" {
		toNamespace = o.namespaceOrDefault()
	}
	dst, err := policyEndpoint(ctx, c, toNamespace, to)
	if err != nil {
		return err
	}
	nps, _, err := client.For[*networking.NetworkPolicy](c).List(ctx, "", client.ListOptions{})
	if err != nil {
		return err
	}
	nss, _, err := client.For[*core.Namespace](c).List(ctx, "", client.ListOptions{})
	if err != nil {
		return err
	}
	nsLabels := map[string]map[string]string{}
	for _, n := range nss {
		nsLabels[n.Name] = n.Labels
	}
	conn := networking.Connection{Src: src.Endpoint, Dst: dst.Endpoint, Protocol: protocol, Port: port}
	v := networking.Decide(nps, nsLabels, conn)
	fmt.Fprintf(o.Out, "%s → %s, port %d/%s\n", src.describe, dst.describe, port, protocol)
	side := func(n int, what, pod string, d networking.DirectionVerdict, dir string) {
		switch {
		case d.AllowedBy != "" && len(d.Selected) == 0: // loopback
			fmt.Fprintf(o.Out, "  %d. %s of %s: allowed: %s\n", n, what, pod, d.AllowedBy)
		case len(d.Selected) == 0:
			fmt.Fprintf(o.Out, "  %d. %s of %s: no NetworkPolicy selects it for %s: not isolated, allowed\n", n, what, pod, strings.ToLower(dir))
		case d.Allowed:
			fmt.Fprintf(o.Out, "  %d. %s of %s: selected by %s; allowed by %s\n", n, what, pod, strings.Join(d.Selected, ", "), d.AllowedBy)
		default:
			fmt.Fprintf(o.Out, "  %d. %s of %s: selected by %s; no rule of theirs allows this connection: denied\n", n, what, pod, strings.Join(d.Selected, ", "))
			fmt.Fprintf(o.Out, "     missing: %s\n", missingRule(dir, conn, nsLabels))
		}
	}
	side(1, "Egress", src.name, v.Egress, networking.PolicyTypeEgress)
	side(2, "Ingress", dst.name, v.Ingress, networking.PolicyTypeIngress)
	verdict := "allowed"
	if !v.Allowed() {
		verdict = "denied"
	}
	fmt.Fprintf(o.Out, "Verdict: %s\n", verdict)
	return nil
}

// policyEndpoint is a pod as a policy sees it.
type namedEndpoint struct {
	networking.Endpoint
	name, describe string
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
	return namedEndpoint{Endpoint: e, name: ns + "/" + name, describe: fmt.Sprintf("pod %s/%s (%s)", ns, name, strings.TrimPrefix(where, ", "))}, nil
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
