package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// LeastAllocated prefers nodes with more free cpu and memory after the pod
// is placed (kube-scheduler's default scoring strategy of NodeResourcesFit):
// the mean of the free fractions, 0–100. It spreads pods out. Containers
// without requests count as 100m cpu and 200Mi (NonZeroRequests).
type LeastAllocated struct{}

var _ framework.ScorePlugin = LeastAllocated{}

// Name implements framework.Plugin.
func (LeastAllocated) Name() string { return "LeastAllocated" }

// Score implements framework.ScorePlugin.
func (LeastAllocated) Score(_ context.Context, state *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	req := nonZeroRequests(state, pod)
	free := func(requested, allocatable int64) int64 {
		if allocatable <= 0 || requested > allocatable {
			return 0
		}
		return (allocatable - requested) * framework.MaxNodeScore / allocatable
	}
	cpu := free(n.NonZeroRequested.MilliCPU+req.MilliCPU, n.Allocatable.MilliCPU)
	mem := free(n.NonZeroRequested.Memory+req.Memory, n.Allocatable.Memory)
	return (cpu + mem) / 2, nil
}
