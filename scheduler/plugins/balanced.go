package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// BalancedAllocation prefers nodes where cpu and memory would be used in
// the same proportion after placing the pod, so neither runs out first.
type BalancedAllocation struct{}

var _ framework.ScorePlugin = BalancedAllocation{}

// Name implements framework.Plugin.
func (BalancedAllocation) Name() string { return "BalancedAllocation" }

// Score implements framework.ScorePlugin: 100 × (1 − |cpu fraction − memory fraction|).
func (BalancedAllocation) Score(_ context.Context, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	req := framework.PodRequests(pod)
	if n.Allocatable.MilliCPU <= 0 || n.Allocatable.Memory <= 0 {
		return 0, nil
	}
	cpu := float64(n.Requested.MilliCPU+req.MilliCPU) / float64(n.Allocatable.MilliCPU)
	mem := float64(n.Requested.Memory+req.Memory) / float64(n.Allocatable.Memory)
	diff := cpu - mem
	if diff < 0 {
		diff = -diff
	}
	if diff > 1 {
		diff = 1
	}
	return int64((1 - diff) * framework.MaxNodeScore), nil
}

// PreferNoSchedule prefers nodes with fewer PreferNoSchedule taints the pod
// does not tolerate (the scoring half of kube-scheduler's TaintToleration).
type PreferNoSchedule struct{}

var (
	_ framework.ScorePlugin     = PreferNoSchedule{}
	_ framework.ScoreNormalizer = PreferNoSchedule{}
)

// Name implements framework.Plugin.
func (PreferNoSchedule) Name() string { return "TaintToleration" }

// Score implements framework.ScorePlugin: the count of untolerated
// PreferNoSchedule taints (fewer is better; Normalize inverts it).
func (PreferNoSchedule) Score(_ context.Context, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	var count int64
	for i := range n.Node.Spec.Taints {
		taint := &n.Node.Spec.Taints[i]
		if taint.Effect != core.TaintPreferNoSchedule {
			continue
		}
		tolerated := false
		for j := range pod.Spec.Tolerations {
			tolerated = tolerated || pod.Spec.Tolerations[j].ToleratesTaint(taint)
		}
		if !tolerated {
			count++
		}
	}
	return count, nil
}

// Normalize implements framework.ScoreNormalizer: no untolerated taint is
// 100, the most-tainted node 0.
func (PreferNoSchedule) Normalize(scores map[string]int64) { normalize(scores, true) }

// PreferredNodeAffinity sums the weights of the pod's preferred node
// affinity terms a node matches (the scoring half of NodeAffinity).
type PreferredNodeAffinity struct{}

var (
	_ framework.ScorePlugin     = PreferredNodeAffinity{}
	_ framework.ScoreNormalizer = PreferredNodeAffinity{}
)

// Name implements framework.Plugin.
func (PreferredNodeAffinity) Name() string { return "NodeAffinity" }

// Score implements framework.ScorePlugin.
func (PreferredNodeAffinity) Score(_ context.Context, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return 0, nil
	}
	var sum int64
	for _, p := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if termMatches(p.Preference, n.Node.Labels, n.Node.Name) {
			sum += int64(p.Weight)
		}
	}
	return sum, nil
}

// Normalize implements framework.ScoreNormalizer: the best node gets 100.
func (PreferredNodeAffinity) Normalize(scores map[string]int64) { normalize(scores, false) }

// normalize rescales scores to 0–100 by the largest; reverse makes the
// smallest raw score the best.
func normalize(scores map[string]int64, reverse bool) {
	var top int64
	for _, s := range scores {
		top = max(top, s)
	}
	for k, s := range scores {
		switch {
		case top == 0 && reverse:
			scores[k] = framework.MaxNodeScore
		case top == 0:
			scores[k] = 0
		case reverse:
			scores[k] = framework.MaxNodeScore - s*framework.MaxNodeScore/top
		default:
			scores[k] = s * framework.MaxNodeScore / top
		}
	}
}
