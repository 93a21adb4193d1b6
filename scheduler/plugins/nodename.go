package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodeName keeps a pod that names a node (spec.nodeName) to that node.
type NodeName struct{}

var _ framework.FilterPlugin = NodeName{}

// Name implements framework.Plugin.
func (NodeName) Name() string { return "NodeName" }

// Filter implements framework.FilterPlugin.
func (NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName == "" || pod.Spec.NodeName == n.Node.Name {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match the requested node name")
}
