package explainpath

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/discovery"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdExplainPath is Kobune's `explain-path`: the way a packet to a
// Service takes on a node — verdict map element, the Service port's
// chain, each endpoint's chain with its DNAT and masquerade — read from
// the node's live nftables table by its agent, with the endpoints named
// after their pods. Kubernetes leaves students to `nft list ruleset`.
func NewCmdExplainPath(o *cmdutil.Options) *cobra.Command {
	var port, from, nodeName, to, toNamespace, protocol, host, path string
	cmd := &cobra.Command{
		Use:   "explain-path (svc/NAME [--port NAME|NUMBER] [--from POD] [--node NODE] | pod/A --to pod/B|svc/NAME [--to-namespace NS] --port N [--protocol TCP] | ingress/NAME [--host H] [--path P])",
		Short: "Show the way a packet takes: a Service's nftables rules on a node, or the NetworkPolicy verdict between two pods (Kobune)",
		Long: "Show the way a packet to a Service's cluster IP takes through a node's rules: the element of the\n" +
			"service-ips verdict map, the Service port's chain, and each endpoint chain with its DNAT,\n" +
			"read from the node's kernel by its agent. --from POD evaluates it on that pod's node, with the\n" +
			"pod as the sender (masquerade, affinity); --node picks a node; by default every node is shown.\n\n" +
			"pod/A --to pod/B --port N judges a connection by the NetworkPolicies: the route between the\n" +
			"nodes, the policies that select each pod, the rule that allows it or the rule that is missing,\n" +
			"and the rules each isolated side's node holds in its kernel. --to svc/NAME does it for every\n" +
			"ready endpoint the Service may send the connection to (--port: the Service's port).\n\n" +
			"ingress/NAME (or --from ingress/NAME) follows a request for --host and --path through the Ingress:\n" +
			"the rule that matches, the TLS Secret, the Service's ready endpoints, and whether the\n" +
			"NetworkPolicies let the ingress controller (on the nodes' host network) reach each of them.",
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && strings.HasPrefix(from, "ingress/") {
				args, from = []string{from}, "" // --from ingress/NAME
			}
			if len(args) != 1 {
				return fmt.Errorf("explain-path takes one of svc/NAME, pod/NAME --to ..., ingress/NAME (or --from ingress/NAME)")
			}
			if typ, name, _ := strings.Cut(args[0], "/"); typ == "ingress" || typ == "ingresses" || typ == "ing" {
				c, err := o.Client()
				if err != nil {
					return err
				}
				ctx, cancel := cmdutil.CtxFor(cmd)
				defer cancel()
				return explainIngress(o, ctx, c, name, host, path)
			}
			if to != "" {
				c, err := o.Client()
				if err != nil {
					return err
				}
				ctx, cancel := cmdutil.CtxFor(cmd)
				defer cancel()
				return explainPolicy(o, ctx, c, args[0], to, toNamespace, protocol, port)
			}
			return explainPath(o, cmd, args[0], port, from, nodeName)
		},
	}
	cmd.Flags().StringVar(&port, "port", "", "the Service port, by name or number (default: every port); with --to, the destination port")
	cmd.Flags().StringVar(&from, "from", "", "a pod sending the packet: its node, with its address as the source")
	cmd.Flags().StringVar(&nodeName, "node", "", "the node whose rules to read (default: every node)")
	cmd.Flags().StringVar(&to, "to", "", "with pod/A: the destination, pod/B or svc/NAME, judged by the NetworkPolicies")
	cmd.Flags().StringVar(&protocol, "protocol", "TCP", "with --to: TCP, UDP or SCTP")
	cmd.Flags().StringVar(&host, "host", "", "with ingress/NAME: the request's host (default: the Ingress's first rule's)")
	cmd.Flags().StringVar(&path, "path", "/", "with ingress/NAME: the request's path")
	cmd.Flags().StringVar(&toNamespace, "to-namespace", "", "with --to: the destination pod's namespace (default: the source's, -n)")
	return cmd
}

func explainPath(o *cmdutil.Options, cmd *cobra.Command, target, portArg, from, nodeName string) error {
	typ, name, ok := strings.Cut(target, "/")
	if !ok || (typ != "svc" && typ != "service" && typ != "services") {
		return fmt.Errorf("explain-path takes svc/NAME, not %q", target)
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	ns := o.NamespaceOrDefault()
	svc, err := client.For[*core.Service](c).Get(ctx, ns, name)
	if err != nil {
		return err
	}
	switch {
	case svc.Spec.Type == core.ServiceTypeExternalName:
		fmt.Fprintf(o.Out, "Service %s/%s is an ExternalName: cluster DNS answers %s.%s.svc with a CNAME to %s; no node rules are involved.\n", ns, name, name, ns, svc.Spec.ExternalName)
		return nil
	case svc.Spec.ClusterIP == core.ClusterIPNone:
		fmt.Fprintf(o.Out, "Service %s/%s is headless: cluster DNS answers %s.%s.svc with the ready pods' addresses and clients connect to a pod directly; no node rules are involved.\n", ns, name, name, ns)
		return nil
	}
	var ports []core.ServicePort
	for _, p := range svc.Spec.Ports {
		if portArg == "" || portArg == p.Name || portArg == strconv.Itoa(int(p.Port)) {
			ports = append(ports, p)
		}
	}
	if len(ports) == 0 {
		return fmt.Errorf("service %s/%s has no port %q", ns, name, portArg)
	}
	source, fromNote := "", ""
	var nodes []string
	switch {
	case from != "":
		pod, err := client.For[*core.Pod](c).Get(ctx, ns, from)
		if err != nil {
			return err
		}
		if pod.Spec.NodeName == "" || pod.Status.PodIP == "" {
			return fmt.Errorf("pod %s has no node or address yet", from)
		}
		nodes, source = []string{pod.Spec.NodeName}, pod.Status.PodIP
		fromNote = fmt.Sprintf(", from pod %s (%s)", from, source)
	case nodeName != "":
		nodes = []string{nodeName}
	default:
		list, _, err := client.For[*core.Node](c).List(ctx, "", client.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range list {
			nodes = append(nodes, n.Name)
		}
		sort.Strings(nodes)
	}
	pods := endpointPods(o, ctx, c, ns, name)
	for i, node := range nodes {
		for j, p := range ports {
			if i+j > 0 {
				fmt.Fprintln(o.Out)
			}
			proto := string(p.Protocol)
			if proto == "" {
				proto = string(core.ProtocolTCP)
			}
			label := strconv.Itoa(int(p.Port)) + "/" + proto
			if p.Name != "" {
				label += " (" + p.Name + ")"
			}
			fmt.Fprintf(o.Out, "Service %s/%s %s port %s, on node %s%s\n", ns, name, svc.Spec.ClusterIP, label, node, fromNote)
			hops, err := c.ServicePath(ctx, node, svc.Spec.ClusterIP, proto, p.Port, source)
			if err != nil {
				fmt.Fprintf(o.Out, "  cannot read the rules of node %s: %s\n", node, client.Message(err))
				continue
			}
			for k, h := range hops {
				fmt.Fprintf(o.Out, "  %d. %s\n", k+1, h.Object)
				for _, l := range h.Lines {
					fmt.Fprintf(o.Out, "       %s\n", l)
				}
				explain := h.Explain
				for ip, who := range pods {
					if strings.Contains(explain, "DNAT to "+ip+":") {
						explain = strings.Replace(explain, "DNAT to "+ip+":", "DNAT to "+who+" "+ip+":", 1)
					}
				}
				if explain != "" {
					fmt.Fprintf(o.Out, "     → %s\n", explain)
				}
			}
		}
	}
	return nil
}

// endpointPods names a Service's endpoint addresses: "pod web-a (node-1)".
func endpointPods(o *cmdutil.Options, ctx context.Context, c *client.Client, ns, svc string) map[string]string {
	out := map[string]string{}
	slices, _, err := client.For[*discovery.EndpointSlice](c).List(ctx, ns, client.ListOptions{LabelSelector: discovery.LabelServiceName + "=" + svc})
	if err != nil {
		return out
	}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.TargetRef == nil {
				continue
			}
			who := "pod " + e.TargetRef.Name
			if e.NodeName != nil {
				who += " (" + *e.NodeName + ")"
			}
			for _, a := range e.Addresses {
				out[a] = who
			}
		}
	}
	return out
}
