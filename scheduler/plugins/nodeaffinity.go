package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodeAffinity enforces the pod's nodeSelector and its required node
// affinity (terms ORed, expressions ANDed; In, NotIn, Exists,
// DoesNotExist, Gt, Lt).
type NodeAffinity struct{}

var _ framework.FilterPlugin = NodeAffinity{}

// Name implements framework.Plugin.
func (NodeAffinity) Name() string { return "NodeAffinity" }

// Filter implements framework.FilterPlugin.
func (NodeAffinity) Filter(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	if !core.PodMatchesNodeSelectorAndAffinity(pod, n.Node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector")
	}
	return nil
}
