package plugins

import (
	"context"
	"math"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/scheduler/framework"
)

// PodTopologySpread enforces the pod's topologySpreadConstraints with
// whenUnsatisfiable: DoNotSchedule, as kube-scheduler does: placing the pod
// on a node must not make the number of matching pods in the node's domain
// exceed the least-populated domain's by more than maxSkew. Domains are the
// values of topologyKey among the nodes that pass the pod's nodeSelector
// and node affinity; with fewer domains than minDomains the least count is
// taken as 0. The ScheduleAnyway constraints are scored by its score half
// (podtopologyspread_score.go).
type PodTopologySpread struct{}

var (
	_ framework.PreFilterPlugin = PodTopologySpread{}
	_ framework.FilterPlugin    = PodTopologySpread{}
)

// Name implements framework.Plugin.
func (PodTopologySpread) Name() string { return "PodTopologySpread" }

const (
	spreadKey           = "PodTopologySpread"
	reasonSpread        = "node(s) didn't match pod topology spread constraints"
	reasonSpreadMissing = "node(s) didn't match pod topology spread constraints (missing required label)"
)

// spreadConstraint is a constraint with its selector parsed, and the count
// of matching pods per domain.
type spreadConstraint struct {
	maxSkew    int
	key        string
	sel        selector.Selector
	minDomains int
	selfMatch  int            // 1 when the incoming pod matches its own selector
	counts     map[string]int // matching pods per domain (absent: none); may be the index's: read only
	domains    int
	minCount   int
}

// spreadConstraints parses the pod's constraints with the given
// whenUnsatisfiable; nil when there are none.
func spreadConstraints(pod *core.Pod, when string) []*spreadConstraint {
	var out []*spreadConstraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != when {
			continue
		}
		sel, err := selector.FromLabelSelector(c.LabelSelector)
		if err != nil {
			sel = selector.Nothing()
		}
		sc := &spreadConstraint{maxSkew: int(c.MaxSkew), key: c.TopologyKey, sel: sel, minDomains: 1}
		if c.MinDomains != nil {
			sc.minDomains = int(*c.MinDomains)
		}
		if sel.Matches(pod.Labels) {
			sc.selfMatch = 1
		}
		out = append(out, sc)
	}
	return out
}

// countSpread counts, for each constraint, the pods matching it (in the
// pod's namespace, not terminating) per domain, over the nodes that pass
// the pod's node affinity and carry every constraint's key, and the least
// count over those domains. A single constraint of a pod without node
// affinity is answered by the index, when there is one.
func countSpread(state *framework.CycleState, pod *core.Pod, cs []*spreadConstraint) {
	if state.Index != nil && len(cs) == 1 && !hasNodeConstraints(pod) {
		c := cs[0]
		c.counts = state.Index.MatchingPods([]string{pod.Namespace}, c.sel, c.key)
		domains := state.Index.Domains(c.key)
		c.domains = len(domains)
		c.minCount = math.MaxInt
		for v := range domains {
			c.minCount = min(c.minCount, c.counts[v])
		}
		c.finish()
		return
	}
	for _, c := range cs {
		c.counts = map[string]int{}
	}
	for _, n := range state.AllNodes {
		if n.Node == nil || !hasKeys(n.Node.Labels, cs) || !core.PodMatchesNodeSelectorAndAffinity(pod, n.Node) {
			continue
		}
		for _, c := range cs {
			v := n.Node.Labels[c.key]
			count := c.counts[v]
			for _, p := range n.Pods {
				if p.Namespace == pod.Namespace && p.DeletionTimestamp == nil && c.sel.Matches(p.Labels) {
					count++
				}
			}
			c.counts[v] = count
		}
	}
	for _, c := range cs {
		c.domains = len(c.counts)
		c.minCount = math.MaxInt
		for _, n := range c.counts {
			c.minCount = min(c.minCount, n)
		}
		c.finish()
	}
}

// finish takes the least count as 0 with fewer domains than minDomains.
func (c *spreadConstraint) finish() {
	if c.domains < c.minDomains || c.domains == 0 {
		c.minCount = 0
	}
}

func hasNodeConstraints(pod *core.Pod) bool {
	a := pod.Spec.Affinity
	return len(pod.Spec.NodeSelector) > 0 || (a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
}

func hasKeys(labels map[string]string, cs []*spreadConstraint) bool {
	for _, c := range cs {
		if _, ok := labels[c.key]; !ok {
			return false
		}
	}
	return true
}

// PreFilter implements framework.PreFilterPlugin.
func (PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *core.Pod) *framework.Status {
	cs := spreadConstraints(pod, "DoNotSchedule")
	if len(cs) > 0 {
		countSpread(state, pod, cs)
	}
	state.Write(spreadKey, cs)
	return nil
}

// Filter implements framework.FilterPlugin.
func (PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, _ *core.Pod, n *framework.NodeInfo) *framework.Status {
	cs, ok := state.Read(spreadKey).([]*spreadConstraint)
	if !ok {
		return framework.NewStatus(framework.Error, "PodTopologySpread: PreFilter did not run")
	}
	for _, c := range cs {
		v, ok := n.Node.Labels[c.key]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonSpreadMissing)
		}
		if c.counts[v]+c.selfMatch-c.minCount > c.maxSkew {
			return framework.NewStatus(framework.Unschedulable, reasonSpread)
		}
	}
	return nil
}
