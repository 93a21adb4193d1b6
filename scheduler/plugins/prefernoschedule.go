package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

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
func (PreferNoSchedule) Score(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
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
func (PreferNoSchedule) Normalize(scores []int64) { normalize(scores, true) }
