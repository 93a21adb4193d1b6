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
func (BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	req := requests(state, pod)
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
