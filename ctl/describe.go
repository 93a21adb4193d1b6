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
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
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
				describeObject(o.Out, obj)
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

// describeObject prints metadata the kubectl way, a pod summary for pods,
// then spec and status as YAML (Kobune shows every field it has).
func describeObject(w io.Writer, obj meta.Object) {
	m := obj.GetObjectMeta()
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", m.Name)
	if m.Namespace != "" {
		fmt.Fprintf(tw, "Namespace:\t%s\n", m.Namespace)
	}
	fmt.Fprintf(tw, "Kind:\t%s (%s)\n", obj.GetTypeMeta().Kind, obj.GetTypeMeta().APIVersion)
	fmt.Fprintf(tw, "Labels:\t%s\n", mapLines(m.Labels))
	ann := map[string]string{}
	for k, v := range m.Annotations {
		if k != LastAppliedAnnotation && k != core.SchedulingDecisionAnnotation {
			ann[k] = v
		}
	}
	fmt.Fprintf(tw, "Annotations:\t%s\n", mapLines(ann))
	fmt.Fprintf(tw, "UID:\t%s\n", m.UID)
	fmt.Fprintf(tw, "CreationTimestamp:\t%s\n", m.CreationTimestamp.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	if m.DeletionTimestamp != nil {
		fmt.Fprintf(tw, "DeletionTimestamp:\t%s\n", m.DeletionTimestamp.Format("Mon, 02 Jan 2006 15:04:05 -0700"))
	}
	if len(m.Finalizers) > 0 {
		fmt.Fprintf(tw, "Finalizers:\t%s\n", strings.Join(m.Finalizers, ", "))
	}
	for _, r := range m.OwnerReferences {
		fmt.Fprintf(tw, "Controlled By:\t%s/%s\n", r.Kind, r.Name)
	}
	if p, ok := obj.(*core.Pod); ok {
		fmt.Fprintf(tw, "Node:\t%s\n", none(p.Spec.NodeName))
		fmt.Fprintf(tw, "Status:\t%s\n", podStatus(p))
		fmt.Fprintf(tw, "IP:\t%s\n", none(p.Status.PodIP))
		fmt.Fprintf(tw, "QoS Class:\t%s\n", p.Status.QOSClass)
		if p.Status.NominatedNodeName != "" {
			fmt.Fprintf(tw, "Nominated Node:\t%s\n", p.Status.NominatedNodeName)
		}
	}
	tw.Flush()
	if d := m.Annotations[core.SchedulingDecisionAnnotation]; d != "" {
		// Kobune shows how the scheduler chose: each node's verdict.
		fmt.Fprintln(w, "Scheduling Decision:")
		for _, line := range strings.Split(d, "; ") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	b, _ := json.Marshal(obj)
	var rest map[string]any
	_ = json.Unmarshal(b, &rest)
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		delete(rest, k)
	}
	keys := make([]string, 0, len(rest))
	for k := range rest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		y, _ := yaml.Marshal(rest[k])
		fmt.Fprintf(w, "%s%s:\n", strings.ToUpper(k[:1]), k[1:])
		for _, line := range strings.Split(strings.TrimRight(string(y), "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
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
	sort.Slice(evs, func(i, j int) bool { return evs[i].LastTimestamp.Before(evs[j].LastTimestamp.Time) })
	fmt.Fprintln(w, "Events:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t----\t----\t-------")
	for _, e := range evs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, sinceOrUnknown(e.LastTimestamp.Time), e.Source.Component, e.Message)
	}
	tw.Flush()
}
