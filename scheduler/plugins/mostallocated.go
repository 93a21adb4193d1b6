package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// MostAllocated prefers nodes whose cpu and memory would be most used
// after the pod is placed (NodeResourcesFit's MostAllocated scoring
// strategy in kube-scheduler): the mean of the used fractions, 0–100. It
// packs pods onto few nodes, leaving others empty (bin packing). Enable it
// instead of LeastAllocated in the --config file.
type MostAllocated struct{}

var _ framework.ScorePlugin = MostAllocated{}

// Name implements framework.Plugin.
func (MostAllocated) Name() string { return "MostAllocated" }

// Score implements framework.ScorePlugin.
func (MostAllocated) Score(_ context.Context, state *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	req := nonZeroRequests(state, pod)
	used := func(requested, allocatable int64) int64 {
		if allocatable <= 0 {
			return 0
		}
		return min(requested, allocatable) * framework.MaxNodeScore / allocatable
	}
	cpu := used(n.NonZeroRequested.MilliCPU+req.MilliCPU, n.Allocatable.MilliCPU)
	mem := used(n.NonZeroRequested.Memory+req.Memory, n.Allocatable.Memory)
	return (cpu + mem) / 2, nil
}
