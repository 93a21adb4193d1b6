package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// TaintToleration's score half (Score, Normalize) prefers nodes with fewer
// PreferNoSchedule taints the pod does not tolerate, as kube-scheduler's
// TaintToleration does; its filter half is in tainttoleration.go.

var (
	_ framework.ScorePlugin     = TaintToleration{}
	_ framework.ScoreNormalizer = TaintToleration{}
)

// Score implements framework.ScorePlugin: the count of untolerated
// PreferNoSchedule taints (fewer is better; Normalize inverts it).
func (TaintToleration) Score(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	var count int64
	for i := range n.Node.Spec.Taints {
		taint := &n.Node.Spec.Taints[i]
		if taint.Effect != core.TaintPreferNoSchedule {
			continue
		}
		if !pod.ToleratesTaint(taint) {
			count++
		}
	}
	return count, nil
}

// Normalize implements framework.ScoreNormalizer: no untolerated taint is
// 100, the most-tainted node 0.
func (TaintToleration) Normalize(scores []int64) { normalize(scores, true) }
