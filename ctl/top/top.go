package top

import (
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/metrics"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdTop is kubectl top: usage from the metrics API
// (metrics.k8s.io), which Kobune's API server serves from the agents'
// latest cgroup samples.
func NewCmdTop(o *cmdutil.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top nodes|pods",
		Short: "Show CPU and memory use of nodes or pods (kubectl top)",
		Long: `Show what nodes and pods use now, from the metrics API
(metrics.k8s.io/v1beta1): CPU as the rate over the last 5 s, memory as the
working set (what the OOM killer and eviction look at). The figures come
from each node's agent, which reads its pods' cgroups every second.

Beyond kubectl: top pods --containers adds a THROTTLED(periods) column,
the CFS periods in which the container was held back by its CPU limit.`,
	}
	var selector, sortBy string
	var all, containers bool
	nodes := &cobra.Command{
		Use:     "nodes [NAME]",
		Aliases: []string{"node", "no"},
		Short:   "CPU and memory of each node, and the share of its allocatable",
		Example: "  kobectl top nodes\n  kobectl top nodes --sort-by=memory",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return topNodes(o, cmd, args, selector, sortBy)
		},
	}
	pods := &cobra.Command{
		Use:     "pods [NAME]",
		Aliases: []string{"pod", "po"},
		Short:   "CPU and memory of each pod (or container, with throttling)",
		Example: "  kobectl top pods -A --sort-by=cpu\n  kobectl top pods web-5d4f --containers",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return topPods(o, cmd, args, selector, sortBy, all, containers)
		},
	}
	for _, c := range []*cobra.Command{nodes, pods} {
		c.Flags().StringVarP(&selector, "selector", "l", "", "only objects with these labels")
		c.Flags().StringVar(&sortBy, "sort-by", "", "cpu or memory (largest first)")
	}
	pods.Flags().BoolVarP(&all, "all-namespaces", "A", false, "pods of every namespace")
	pods.Flags().BoolVar(&containers, "containers", false, "a line per container, with its CFS throttling (periods throttled of periods run: a Kobune column)")
	cmd.AddCommand(nodes, pods)
	return cmd
}

func checkSortBy(s string) error {
	if s != "" && s != "cpu" && s != "memory" {
		return fmt.Errorf("--sort-by %q: use cpu or memory", s)
	}
	return nil
}

// less orders usages by --sort-by, largest first.
func usageLess(sortBy string, a, b resource.List) bool {
	qa, qb := a[resource.Name(sortBy)], b[resource.Name(sortBy)]
	return qa.Cmp(qb) > 0
}

func cores(q resource.Quantity) string { return fmt.Sprintf("%dm", q.MilliValue()) }
func mebi(q resource.Quantity) string  { return fmt.Sprintf("%dMi", q.Value()/(1<<20)) }
func percent(used, of int64) string {
	if of <= 0 {
		return "<unknown>"
	}
	return fmt.Sprintf("%d%%", used*100/of)
}

func topNodes(o *cmdutil.Options, cmd *cobra.Command, args []string, sel, sortBy string) error {
	if err := checkSortBy(sortBy); err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	list, err := c.NodeMetrics(ctx, sel)
	if err != nil {
		return err
	}
	items := list.Items
	if len(args) == 1 {
		items = nil
		for _, m := range list.Items {
			if m.Name == args[0] {
				items = append(items, m)
			}
		}
		if len(items) == 0 {
			return fmt.Errorf("no metrics for node %s: is it a simulated node, or has its agent not sampled twice yet (wait a few seconds)?", args[0])
		}
	}
	if len(items) == 0 {
		return fmt.Errorf("no node metrics available yet: agents sample every second and rate CPU over 5 s; simulated nodes measure nothing")
	}
	if sortBy != "" {
		sort.SliceStable(items, func(i, j int) bool { return usageLess(sortBy, items[i].Usage, items[j].Usage) })
	}
	nodeList, _, err := client.For[*core.Node](c).List(ctx, "", client.ListOptions{LabelSelector: sel})
	if err != nil {
		return err
	}
	alloc := map[string]resource.List{}
	for _, n := range nodeList {
		alloc[n.Name] = n.Status.Allocatable
	}
	tw := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCPU(cores)\tCPU(%)\tMEMORY(bytes)\tMEMORY(%)")
	for _, m := range items {
		cpu, mem := m.Usage[resource.CPU], m.Usage[resource.Memory]
		a := alloc[m.Name]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, cores(cpu), percent(cpu.MilliValue(), a.Cpu().MilliValue()), mebi(mem), percent(mem.Value(), a.Memory().Value()))
	}
	return tw.Flush()
}

func topPods(o *cmdutil.Options, cmd *cobra.Command, args []string, sel, sortBy string, all, containers bool) error {
	if err := checkSortBy(sortBy); err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	ns := o.NamespaceOrDefault()
	if all {
		ns = ""
	}
	list, err := c.PodMetrics(ctx, ns, sel)
	if err != nil {
		return err
	}
	var items []metrics.PodMetrics
	for _, m := range list.Items {
		if len(args) == 0 || m.Name == args[0] {
			items = append(items, m)
		}
	}
	if len(items) == 0 {
		if len(args) == 1 {
			return fmt.Errorf("no metrics for pod %s/%s: is it running on a real node, and sampled twice yet (wait a few seconds)?", ns, args[0])
		}
		fmt.Fprintln(o.ErrOut, "No resources found")
		return nil
	}
	total := func(m metrics.PodMetrics) resource.List {
		sum := resource.List{}
		for _, ct := range m.Containers {
			for n, q := range ct.Usage {
				sum[n] = sum[n].Add(q)
			}
		}
		return sum
	}
	if sortBy != "" {
		sort.SliceStable(items, func(i, j int) bool { return usageLess(sortBy, total(items[i]), total(items[j])) })
	}
	tw := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
	head := "NAME\tCPU(cores)\tMEMORY(bytes)"
	if containers {
		head = "POD\tNAME\tCPU(cores)\tMEMORY(bytes)\tTHROTTLED(periods)"
	}
	if all {
		head = "NAMESPACE\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, m := range items {
		prefix := ""
		if all {
			prefix = m.Namespace + "\t"
		}
		if !containers {
			u := total(m)
			fmt.Fprintf(tw, "%s%s\t%s\t%s\n", prefix, m.Name, cores(u[resource.CPU]), mebi(u[resource.Memory]))
			continue
		}
		for _, ct := range m.Containers {
			throttled := "-" // no CFS quota: never throttled
			if t := ct.Throttling; t != nil {
				throttled = fmt.Sprintf("%d/%d", t.ThrottledPeriods, t.Periods)
			}
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\n", prefix, m.Name, ct.Name, cores(ct.Usage[resource.CPU]), mebi(ct.Usage[resource.Memory]), throttled)
		}
	}
	return tw.Flush()
}
