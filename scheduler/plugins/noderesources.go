package plugins

import (
	"context"
	"maps"
	"slices"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodeResourcesFit rejects a node when the pod's cpu, memory or extended
// resource requests, or one more pod, exceed what is allocatable minus what
// is already requested.
type NodeResourcesFit struct{}

var _ framework.FilterPlugin = NodeResourcesFit{}

// Name implements framework.Plugin.
func (NodeResourcesFit) Name() string { return "NodeResourcesFit" }

// Filter implements framework.FilterPlugin.
func (NodeResourcesFit) Filter(_ context.Context, state *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	req := requests(state, pod)
	var reasons []string
	if n.Requested.Pods+1 > n.Allocatable.Pods {
		reasons = append(reasons, "Too many pods")
	}
	// Compared as "more than what is left", which cannot overflow.
	if req.MilliCPU > 0 && req.MilliCPU > n.Allocatable.MilliCPU-n.Requested.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if req.Memory > 0 && req.Memory > n.Allocatable.Memory-n.Requested.Memory {
		reasons = append(reasons, "Insufficient memory")
	}
	for _, name := range slices.Sorted(maps.Keys(req.Extended)) {
		// A node that does not advertise the resource has none of it.
		if want := req.Extended[name]; want > 0 && want > n.Allocatable.Extended[name]-n.Requested.Extended[name] {
			reasons = append(reasons, "Insufficient "+string(name))
		}
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.Unschedulable, reasons...)
	}
	return nil
}

// nonZeroRequests are the pod's requests with the scoring defaults.
func nonZeroRequests(state *framework.CycleState, pod *core.Pod) framework.Resources {
	if state != nil {
		return state.NonZero
	}
	return framework.NonZeroRequests(pod)
}

// requests are the pod's requests, computed once per attempt in the state
// (or now, when a test calls a plugin without one).
func requests(state *framework.CycleState, pod *core.Pod) framework.Resources {
	if state != nil {
		return state.Requests
	}
	return framework.PodRequests(pod)
}
