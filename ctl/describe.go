package ctl

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
)

func newDescribeCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "describe TYPE NAME | TYPE/NAME",
		Short: "Show an object in detail, with its events (kubectl describe)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, names, err := parseTarget(args)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				return fmt.Errorf("describe needs a name: kobectl describe %s NAME", k.Resource)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := ctxFor(cmd)
			defer cancel()
			ns := o.namespaceFor(k, false)
			for i, name := range names {
				b, err := c.Resource(k).Get(ctx, ns, name)
				if err != nil {
					return err
				}
				obj, err := k.Decode(b)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(o.Out)
				}
				if err := describeObject(ctx, o.Out, c, obj); err != nil {
					return err
				}
				if svc, ok := obj.(*core.Service); ok {
					if err := describeServiceEndpoints(ctx, o.Out, c, svc); err != nil {
						return err
					}
				}
				sel := fmt.Sprintf("involvedObject.name=%s,involvedObject.kind=%s", name, k.Kind)
				events, _, err := c.Resource(eventKind).List(ctx, obj.GetObjectMeta().Namespace, client.ListOptions{FieldSelector: sel})
				if err != nil {
					return err
				}
				describeEvents(o.Out, events, obj.GetObjectMeta().UID)
			}
			return nil
		},
	}
}

// eventKind is the kind describe lists for an object's events.
var eventKind, _ = scheme.ByResource("events")

// endpointsKind is the kind of a Service's Endpoints.
var endpointsKind, _ = scheme.ByResource("endpoints")

// describeServiceEndpoints prints, per port, the addresses behind the
// Service, as kubectl describe svc does ("Endpoints: 10.244.1.2:8080,...").
func describeServiceEndpoints(ctx context.Context, w io.Writer, c *client.Client, svc *core.Service) error {
	b, err := c.Resource(endpointsKind).Get(ctx, svc.Namespace, svc.Name)
	if client.IsNotFound(err) {
		b = nil
	} else if err != nil {
		return err
	}
	var ep core.Endpoints
	if b != nil {
		if err := json.Unmarshal(b, &ep); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, p := range svc.Spec.Ports {
		var addrs []string
		for _, s := range ep.Subsets {
			for _, sp := range s.Ports {
				if sp.Name != p.Name {
					continue
				}
				for _, a := range s.Addresses {
					addrs = append(addrs, fmt.Sprintf("%s:%d", a.IP, sp.Port))
				}
			}
		}
		name := p.Name
		if name == "" {
			name = "<unset>"
		}
		fmt.Fprintf(tw, "Port %s:\t%d/%s -> %s\n", name, p.Port, p.Protocol, p.TargetPort.String())
		if p.NodePort != 0 {
			fmt.Fprintf(tw, "  NodePort:\t%d/%s\n", p.NodePort, p.Protocol)
		}
		fmt.Fprintf(tw, "  Endpoints:\t%s\n", none(firstFew(addrs)))
	}
	return tw.Flush()
}

// describeObject prints an object in kubectl's sections: the metadata,
// then the kind's own sections (pods, nodes, workloads; Kobune adds the
// scheduler's decision to pods), or, for other kinds, spec and status as
// an indented tree.
func describeObject(ctx context.Context, w io.Writer, c *client.Client, obj meta.Object) error {
	m := obj.GetObjectMeta()
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", m.Name)
	if m.Namespace != "" {
		fmt.Fprintf(tw, "Namespace:\t%s\n", m.Namespace)
	}
	fmt.Fprintf(tw, "Labels:\t%s\n", mapLines(m.Labels))
	ann := map[string]string{}
	for k, v := range m.Annotations {
		if k != LastAppliedAnnotation && k != core.SchedulingDecisionAnnotation {
			ann[k] = v
		}
	}
	fmt.Fprintf(tw, "Annotations:\t%s\n", mapLines(ann))
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
	case *core.Pod:
		describePod(tw, x)
	case *core.Node:
		if err := describeNode(ctx, tw, c, x); err != nil {
			return err
		}
	case *core.Service:
		fmt.Fprintf(tw, "Selector:\t%s\n", printers.LabelString(x.Spec.Selector))
		fmt.Fprintf(tw, "Type:\t%s\n", x.Spec.Type)
		fmt.Fprintf(tw, "IP:\t%s\n", none(x.Spec.ClusterIP))
		if x.Spec.ExternalName != "" {
			fmt.Fprintf(tw, "External Name:\t%s\n", x.Spec.ExternalName)
		}
		fmt.Fprintf(tw, "Session Affinity:\t%s\n", none(string(x.Spec.SessionAffinity)))
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
	if err := tw.Flush(); err != nil {
		return err
	}
	if d := m.Annotations[core.SchedulingDecisionAnnotation]; d != "" {
		// Kobune shows how the scheduler chose: each node's verdict.
		fmt.Fprintln(w, "Scheduling Decision:")
		for _, line := range strings.Split(d, "; ") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	return nil
}

func mapLines(m map[string]string) string {
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
		lines[i] = k + "=" + m[k]
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
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, sinceOrUnknown(e.LastTimestamp.Time), e.Source.Component, e.Message)
	}
	tw.Flush()
}
