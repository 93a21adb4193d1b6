package plugins

import (
	"context"
	"math"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// PodTopologySpread's score half (PreScore, Score, Normalize) scores the
// pod's topologySpreadConstraints with whenUnsatisfiable: ScheduleAnyway:
// the fewer matching pods in a node's domain, the better. Each
// constraint's count is weighted by log(domains + 2), so a key with many
// domains (hostname) weighs more than one with few (zone), as in
// Kubernetes. Nodes without a constraint's key score 0, and so does every
// node when the pod has no such constraint. The filter half is in
// podtopologyspread.go.

var (
	_ framework.PreScorePlugin  = PodTopologySpread{}
	_ framework.ScorePlugin     = PodTopologySpread{}
	_ framework.ScoreNormalizer = PodTopologySpread{}
)

const spreadScoreKey = "TopologySpreadScore"

type spreadScoreState struct {
	cs      []*spreadConstraint
	weights []float64
}

// ignoredNode marks a raw score for a node without the constraints' keys.
const ignoredNode = -1

// PreScore implements framework.PreScorePlugin.
func (PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *core.Pod, _ []*framework.NodeInfo) *framework.Status {
	st := &spreadScoreState{cs: spreadConstraints(pod, "ScheduleAnyway")}
	if len(st.cs) > 0 {
		countSpread(state, pod, st.cs)
		for _, c := range st.cs {
			st.weights = append(st.weights, math.Log(float64(c.domains+2)))
		}
	}
	state.Write(spreadScoreKey, st)
	return nil
}

// Score implements framework.ScorePlugin: Σ count × weight + (maxSkew − 1),
// in thousandths; lower is better, Normalize inverts it.
func (PodTopologySpread) Score(_ context.Context, state *framework.CycleState, _ *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	st, _ := state.Read(spreadScoreKey).(*spreadScoreState)
	if st == nil {
		return 0, framework.NewStatus(framework.Error, "PodTopologySpread: PreScore did not run")
	}
	if len(st.cs) == 0 || !hasKeys(n.Node.Labels, st.cs) {
		return ignoredNode, nil
	}
	var s float64
	for i, c := range st.cs {
		s += float64(c.counts[n.Node.Labels[c.key]])*st.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(s * 1000)), nil
}

// Normalize implements framework.ScoreNormalizer as kube-scheduler does:
// 100 × (max + min − score) / max over the nodes with the keys (all 100
// when max is 0); nodes without the keys get 0.
func (PodTopologySpread) Normalize(scores []int64) {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		if s != ignoredNode {
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	for i, s := range scores {
		switch {
		case s == ignoredNode:
			scores[i] = 0
		case hi == 0:
			scores[i] = framework.MaxNodeScore
		default:
			scores[i] = framework.MaxNodeScore * (hi + lo - s) / hi
		}
	}
}
