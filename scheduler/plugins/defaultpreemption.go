package plugins

import (
	"context"
	"sort"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/scheduler/framework"
)

// DefaultPreemption is kube-scheduler's PostFilter plugin of the same
// name: when a pod fits nowhere, it looks for the node where deleting pods
// of lower priority makes room, breaking the fewest PodDisruptionBudgets,
// with the fewest and least important victims. It only chooses; the scheduler then nominates the node in the
// pod's status.nominatedNodeName, deletes the victims gracefully and keeps
// the room for the pod (pods of lower priority are filtered as if it were
// already there) until they are gone.
type DefaultPreemption struct {
	// Handle runs the profile's filters on the changed nodes it tries.
	Handle framework.Handle
}

var _ framework.PostFilterPlugin = DefaultPreemption{}

// Name implements framework.Plugin.
func (DefaultPreemption) Name() string { return "DefaultPreemption" }

// PostFilter implements framework.PostFilterPlugin. It skips a pod with
// preemptionPolicy Never, and one already waiting for earlier victims on
// its nominated node to go.
func (pl DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, pod *core.Pod, verdict func(i int) *framework.Status) (*framework.PostFilterResult, *framework.Status) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == "Never" {
		return nil, framework.NewStatus(framework.Skip)
	}
	nodes := state.AllNodes
	prio := framework.PodPriority(pod)
	if nn := pod.Status.NominatedNodeName; nn != "" {
		for _, ni := range nodes {
			if ni.Node.Name != nn {
				continue
			}
			for _, p := range ni.Pods {
				if p.DeletionTimestamp != nil && framework.PodPriority(p) < prio {
					return nil, framework.NewStatus(framework.Skip) // earlier victims are still terminating
				}
			}
		}
	}
	var best *framework.PostFilterResult
	var bestKey [4]int64
	var budgets []*policy.PodDisruptionBudget
	if state.Budgets != nil {
		budgets = state.Budgets()
	}
	noVictims, notHelpful := 0, 0
	// The cluster as the filters see it while victims are tried on one
	// node: one copy for the whole search, that node swapped in and out
	// (a copy per try made a search over 5,000 nodes allocate 2.3 GB).
	scratch := append([]*framework.NodeInfo(nil), nodes...)
	for i, ni := range nodes {
		if verdict == nil {
			notHelpful++ // a PreFilter ruled every node out
			continue
		}
		if st := verdict(i); st != nil && st.Code == framework.UnschedulableAndUnresolvable {
			notHelpful++
			continue
		}
		var lower, higher []*core.Pod
		for _, p := range ni.Pods {
			if framework.PodPriority(p) < prio {
				lower = append(lower, p)
			} else {
				higher = append(higher, p)
			}
		}
		if len(lower) == 0 {
			noVictims++
			continue
		}
		fits := func(placed []*core.Pod) bool { return pl.fitsWith(ctx, state.Index, pod, scratch, i, placed) }
		if !fits(higher) {
			notHelpful++
			continue
		}
		// Reprieve: put back as many as still leave room — first the pods
		// whose disruption budget would break (as Kubernetes), each group
		// the most important first.
		sort.SliceStable(lower, func(a, b int) bool { return framework.PodPriority(lower[a]) > framework.PodPriority(lower[b]) })
		breaking, sparing := splitByBudget(lower, budgets)
		kept := higher
		var victims []*core.Pod
		violations := 0
		for _, group := range []struct {
			pods     []*core.Pod
			breaking bool
		}{{breaking, true}, {sparing, false}} {
			for _, p := range group.pods {
				if fits(append(kept[:len(kept):len(kept)], p)) {
					kept = append(kept, p)
				} else {
					victims = append(victims, p)
					if group.breaking {
						violations++
					}
				}
			}
		}
		// The fewest budgets broken; then fewest and least important: the
		// lowest highest-priority victim, then the fewest victims, then
		// the lowest sum of priorities.
		var top, sum int64 = -1 << 40, 0
		for _, v := range victims {
			top = max(top, int64(framework.PodPriority(v)))
			sum += int64(framework.PodPriority(v))
		}
		key := [4]int64{int64(violations), top, int64(len(victims)), sum}
		if best == nil || lessKey(key, bestKey) {
			best, bestKey = &framework.PostFilterResult{NominatedNodeName: ni.Node.Name, Victims: victims}, key
		}
	}
	if best == nil {
		return nil, framework.NewStatus(framework.Unschedulable, preemptionFailure(len(nodes), noVictims, notHelpful))
	}
	return best, nil
}

// splitByBudget sorts candidate victims into those whose eviction would
// take a PodDisruptionBudget below its allowed disruptions (counting the
// candidates before them) and the others, as Kubernetes'
// filterPodsWithPDBViolation does.
func splitByBudget(pods []*core.Pod, budgets []*policy.PodDisruptionBudget) (breaking, sparing []*core.Pod) {
	allowed := make([]int32, len(budgets))
	sels := make([]selector.Selector, len(budgets))
	for i, b := range budgets {
		allowed[i] = b.Status.DisruptionsAllowed
		if b.Spec.Selector != nil {
			sels[i], _ = selector.FromLabelSelector(b.Spec.Selector)
		}
	}
	for _, p := range pods {
		breaks := false
		for i, b := range budgets {
			if b.Spec.Selector == nil || b.Namespace != p.Namespace || !sels[i].Matches(p.Labels) {
				continue
			}
			allowed[i]--
			if allowed[i] < 0 {
				breaks = true
			}
		}
		if breaks {
			breaking = append(breaking, p)
		} else {
			sparing = append(sparing, p)
		}
	}
	return breaking, sparing
}

func lessKey(a, b [4]int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func preemptionFailure(nodes, noVictims, notHelpful int) string {
	reasons := map[string]int{}
	if noVictims > 0 {
		reasons["No preemption victims found for incoming pod"] = noVictims
	}
	if notHelpful > 0 {
		reasons["Preemption is not helpful for scheduling"] = notHelpful
	}
	return "preemption: " + framework.FitErrorMessage(nodes, reasons, "")
}

// fitsWith reports whether pod passes every filter on nodes[i] if only the
// given pods were there. Filters that look across nodes get a fresh
// PreFilter over the changed cluster: nodes[i] is replaced for the call and
// put back before it returns; the cluster index, when there is one, is
// seen without the pods taken off.
func (pl DefaultPreemption) fitsWith(ctx context.Context, index framework.ClusterIndex, pod *core.Pod, nodes []*framework.NodeInfo, i int, placed []*core.Pod) bool {
	orig := nodes[i]
	ni := framework.NewNodeInfo(orig.Node, placed...)
	nodes[i] = ni
	defer func() { nodes[i] = orig }()
	state := framework.NewCycleState(pod, nodes)
	if index != nil {
		state.Index = framework.WithoutPods(index, orig.Node, framework.RemovedPods(orig.Pods, placed))
	}
	if _, st := pl.Handle.RunPreFilterPlugins(ctx, state, pod); !st.IsSuccess() {
		return false
	}
	_, st := pl.Handle.RunFilterPlugins(ctx, state, pod, ni)
	return st.IsSuccess()
}
