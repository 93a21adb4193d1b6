package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/printers"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func NewCmdDescribe(o *cmdutil.Options) *cobra.Command {
	var selector string
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "describe TYPE [NAME ...] | TYPE/NAME [-l SELECTOR] [-A]",
		Short: "Show objects in detail, with their events (kubectl describe)",
		Long: `Show objects in detail, in kubectl describe's sections and words, with
their events (oldest first).

Beyond kubectl: a pod the scheduler placed also shows its Scheduling
Decision — every node's verdict (the filter that rejected it, or its
score per plugin) — recorded when the pod was bound.`,
		Example: `  # One pod
  kobectl describe pod web-0

  # Every pod of the namespace, or those with a label
  kobectl describe pods
  kobectl describe pods -l app=web

  # Every node
  kobectl describe nodes`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, names, err := o.ParseTarget(args)
			if err != nil {
				return err
			}
			if len(names) > 0 && selector != "" {
				return fmt.Errorf("name cannot be provided when a selector is specified")
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			ns := o.NamespaceFor(k, allNamespaces)
			// Named ones, or (as kubectl) every object of the type or those selected.
			objs, _, err := cmdutil.Fetch(ctx, c, k, ns, names, selector, "")
			if err != nil {
				return err
			}
			if len(objs) == 0 {
				o.NoResources(ns)
				return nil
			}
			for i, obj := range objs {
				if i > 0 {
					fmt.Fprint(o.Out, "\n\n") // kubectl's gap between descriptions
				}
				if err := describeOne(o, ctx, c, k, obj); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "describe the objects with these labels (app=web, tier in (a,b))")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "the objects of every namespace")
	return cmd
}

// describeOne prints one object's description and its events.
func describeOne(o *cmdutil.Options, ctx context.Context, c *client.Client, k *scheme.Kind, obj meta.Object) error {
	if err := describeObject(ctx, o.Out, c, obj); err != nil {
		return err
	}
	m := obj.GetObjectMeta()
	sel := fmt.Sprintf("involvedObject.name=%s,involvedObject.kind=%s", m.Name, k.Kind)
	events, _, err := c.Resource(eventKind).List(ctx, m.Namespace, client.ListOptions{FieldSelector: sel})
	if err != nil {
		return err
	}
	describeEvents(o.Out, events, m.UID)
	return nil
}

// eventKind is the kind describe lists for an object's events.
var eventKind, _ = scheme.ByResource("events")

// endpointsKind is the kind of a Service's Endpoints.
var endpointsKind, _ = scheme.ByResource("endpoints")

// endpointsOf reads a Service's Endpoints (none yet: empty).
func endpointsOf(ctx context.Context, c *client.Client, svc *core.Service) (*core.Endpoints, error) {
	var ep core.Endpoints
	b, err := c.Resource(endpointsKind).Get(ctx, svc.Namespace, svc.Name)
	if client.IsNotFound(err) {
		return &ep, nil
	}
	if err != nil {
		return nil, err
	}
	return &ep, json.Unmarshal(b, &ep)
}

// describeService prints a Service as kubectl describe svc does: its
// addresses and IP families, then per port the port, target port, node
// port and the endpoints behind it, then affinity and traffic policies.
func describeService(tw io.Writer, svc *core.Service, ep *core.Endpoints) {
	sp := svc.Spec
	fmt.Fprintf(tw, "Selector:\t%s\n", printers.LabelString(sp.Selector))
	fmt.Fprintf(tw, "Type:\t%s\n", sp.Type)
	if sp.IPFamilyPolicy != nil {
		fmt.Fprintf(tw, "IP Family Policy:\t%s\n", *sp.IPFamilyPolicy)
	}
	fmt.Fprintf(tw, "IP Families:\t%s\n", printers.None(strings.Join(sp.IPFamilies, ",")))
	fmt.Fprintf(tw, "IP:\t%s\n", sp.ClusterIP)
	fmt.Fprintf(tw, "IPs:\t%s\n", printers.None(strings.Join(sp.ClusterIPs, ",")))
	if sp.ExternalName != "" {
		fmt.Fprintf(tw, "External Name:\t%s\n", sp.ExternalName)
	}
	for _, p := range sp.Ports {
		name := p.Name
		if name == "" {
			name = "<unset>"
		}
		fmt.Fprintf(tw, "Port:\t%s  %d/%s\n", name, p.Port, p.Protocol)
		fmt.Fprintf(tw, "TargetPort:\t%s/%s\n", p.TargetPort.String(), p.Protocol)
		if p.NodePort != 0 {
			fmt.Fprintf(tw, "NodePort:\t%s  %d/%s\n", name, p.NodePort, p.Protocol)
		}
		var addrs []string
		for _, s := range ep.Subsets {
			for _, port := range s.Ports {
				if port.Name != p.Name {
					continue
				}
				for _, a := range s.Addresses {
					addrs = append(addrs, fmt.Sprintf("%s:%d", a.IP, port.Port))
				}
			}
		}
		fmt.Fprintf(tw, "Endpoints:\t%s\n", printers.None(printers.FirstFew(addrs)))
	}
	fmt.Fprintf(tw, "Session Affinity:\t%s\n", printers.None(sp.SessionAffinity))
	if sp.ExternalTrafficPolicy != "" {
		fmt.Fprintf(tw, "External Traffic Policy:\t%s\n", sp.ExternalTrafficPolicy)
	}
	if sp.InternalTrafficPolicy != nil {
		fmt.Fprintf(tw, "Internal Traffic Policy:\t%s\n", *sp.InternalTrafficPolicy)
	}
}

// describeObject prints an object in kubectl's sections: the metadata,
// then the kind's own sections (pods, nodes, workloads; Kobune adds the
// scheduler's decision to pods), or, for other kinds, spec and status as
// an indented tree.
func describeObject(ctx context.Context, w io.Writer, c *client.Client, obj meta.Object) error {
	m := obj.GetObjectMeta()
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0) // kubectl describe's padding
	if p, ok := obj.(*core.Pod); ok {
		describePod(tw, p) // kubectl's own order for pods
		return flushWithDecision(w, tw, m)
	}
	fmt.Fprintf(tw, "Name:\t%s\n", m.Name)
	if m.Namespace != "" {
		fmt.Fprintf(tw, "Namespace:\t%s\n", m.Namespace)
	}
	describeLabelsAndAnnotations(tw, m)
	if svc, ok := obj.(*core.Service); ok { // kubectl shows no timestamps for Services
		ep, err := endpointsOf(ctx, c, svc)
		if err != nil {
			return err
		}
		describeService(tw, svc, ep)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "CreationTimestamp:\t%s\n", m.CreationTimestamp.Format(describeTime))
	if m.DeletionTimestamp != nil {
		fmt.Fprintf(tw, "DeletionTimestamp:\t%s\n", m.DeletionTimestamp.Format(describeTime))
	}
	if len(m.Finalizers) > 0 {
		fmt.Fprintf(tw, "Finalizers:\t%s\n", strings.Join(m.Finalizers, ", "))
	}
	for _, r := range m.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			fmt.Fprintf(tw, "Controlled By:\t%s/%s\n", r.Kind, r.Name)
		}
	}
	switch x := obj.(type) {
	case *core.Node:
		if err := describeNode(ctx, tw, c, x); err != nil {
			return err
		}
	case *core.ConfigMap:
		fmt.Fprint(tw, "\nData\n====\n")
		for _, k := range sortedKeys(x.Data) {
			fmt.Fprintf(tw, "%s:\n----\n%s\n\n", k, x.Data[k])
		}
		fmt.Fprint(tw, "\nBinaryData\n====\n")
		for k, v := range x.BinaryData {
			fmt.Fprintf(tw, "%s: %d bytes\n", k, len(v))
		}
		fmt.Fprintln(tw)
	case *core.Secret:
		fmt.Fprintf(tw, "\nType:\t%s\n\nData\n====\n", x.Type)
		keys := make([]string, 0, len(x.Data))
		for k := range x.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys { // sizes only, as kubectl: describe shows no secret
			fmt.Fprintf(tw, "%s:\t%d bytes\n", k, len(x.Data[k]))
		}
	case *core.Namespace:
		if err := describeNamespace(ctx, tw, c, x); err != nil {
			return err
		}
	case *core.LimitRange:
		describeLimitRange(tw, x)
	case *core.ResourceQuota:
		describeResourceQuota(tw, x)
	case *autoscaling.HorizontalPodAutoscaler:
		describeHPA(tw, x)
	case *policy.PodDisruptionBudget:
		describePDB(tw, x)
	case *networking.NetworkPolicy:
		describeNetworkPolicy(tw, x)
	case *networking.Ingress:
		describeIngress(tw, x)
	default:
		if !describeWorkload(tw, obj) {
			b, _ := json.Marshal(obj)
			var rest map[string]any
			_ = json.Unmarshal(b, &rest)
			for _, k := range []string{"metadata", "kind", "apiVersion"} {
				delete(rest, k)
			}
			fmt.Fprintf(tw, "API Version:\t%s\n", obj.GetTypeMeta().APIVersion)
			fmt.Fprintf(tw, "Kind:\t%s\n", obj.GetTypeMeta().Kind)
			printTree(tw, rest, "")
		}
	}
	return flushWithDecision(w, tw, m)
}

// flushWithDecision ends a description: the table, then (Kobune's
// addition) how the scheduler chose, each node's verdict.
func flushWithDecision(w io.Writer, tw *tabwriter.Writer, m *meta.ObjectMeta) error {
	if err := tw.Flush(); err != nil {
		return err
	}
	if d := m.Annotations[core.SchedulingDecisionAnnotation]; d != "" {
		fmt.Fprintln(w, "Scheduling Decision:")
		for _, line := range strings.Split(d, "; ") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	return nil
}

// describeLabelsAndAnnotations prints kubectl's Labels and Annotations
// lines (without the last-applied manifest and Kobune's decision record).
func describeLabelsAndAnnotations(tw io.Writer, m *meta.ObjectMeta) {
	fmt.Fprintf(tw, "Labels:\t%s\n", mapLines(m.Labels))
	ann := map[string]string{}
	for k, v := range m.Annotations {
		if k != cmdutil.LastAppliedAnnotation && k != core.SchedulingDecisionAnnotation {
			ann[k] = v
		}
	}
	fmt.Fprintf(tw, "Annotations:\t%s\n", annotationLines(ann))
}

func mapLines(m map[string]string) string { return joinedLines(m, "=") }

// annotationLines are kubectl's annotation lines: "key: value".
func annotationLines(m map[string]string) string { return joinedLines(m, ": ") }

func joinedLines(m map[string]string, sep string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + sep + m[k]
	}
	return strings.Join(lines, "\n\t")
}

func describeEvents(w io.Writer, items [][]byte, uid string) {
	var evs []core.Event
	for _, b := range items {
		var e core.Event
		if json.Unmarshal(b, &e) == nil && (e.InvolvedObject.UID == "" || e.InvolvedObject.UID == uid) {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 {
		fmt.Fprintln(w, "Events:  <none>")
		return
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].LastTimestamp.Before(evs[j].LastTimestamp.Time) }) // the list order (by name: by time) breaks ties
	fmt.Fprintln(w, "Events:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t----\t----\t-------")
	for _, e := range evs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, printers.SinceOrUnknown(e.LastTimestamp.Time), e.Source.Component, e.Message)
	}
	tw.Flush()
}
