package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodeResourcesFit rejects a node when the pod's cpu or memory requests, or
// one more pod, exceed what is allocatable minus what is already requested.
type NodeResourcesFit struct{}

var _ framework.FilterPlugin = NodeResourcesFit{}

// Name implements framework.Plugin.
func (NodeResourcesFit) Name() string { return "NodeResourcesFit" }

// Filter implements framework.FilterPlugin.
func (NodeResourcesFit) Filter(_ context.Context, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	req := framework.PodRequests(pod)
	var reasons []string
	if n.Requested.Pods+1 > n.Allocatable.Pods {
		reasons = append(reasons, "Too many pods")
	}
	if req.MilliCPU > 0 && n.Requested.MilliCPU+req.MilliCPU > n.Allocatable.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if req.Memory > 0 && n.Requested.Memory+req.Memory > n.Allocatable.Memory {
		reasons = append(reasons, "Insufficient memory")
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

// LeastAllocated prefers nodes with more free cpu and memory after the pod
// is placed (kube-scheduler's default scoring strategy): the mean of the
// free fractions, 0–100.
type LeastAllocated struct{}

var _ framework.ScorePlugin = LeastAllocated{}

// Name implements framework.Plugin.
func (LeastAllocated) Name() string { return "LeastAllocated" }

// Score implements framework.ScorePlugin.
func (LeastAllocated) Score(_ context.Context, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	req := framework.PodRequests(pod)
	free := func(requested, allocatable int64) int64 {
		if allocatable <= 0 || requested > allocatable {
			return 0
		}
		return (allocatable - requested) * framework.MaxNodeScore / allocatable
	}
	cpu := free(n.Requested.MilliCPU+req.MilliCPU, n.Allocatable.MilliCPU)
	mem := free(n.Requested.Memory+req.Memory, n.Allocatable.Memory)
	return (cpu + mem) / 2, nil
}
