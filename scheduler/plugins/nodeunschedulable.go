package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodeUnschedulable rejects cordoned nodes (spec.unschedulable) unless the
// pod tolerates the node.kubernetes.io/unschedulable taint.
type NodeUnschedulable struct{}

var _ framework.FilterPlugin = NodeUnschedulable{}

// Name implements framework.Plugin.
func (NodeUnschedulable) Name() string { return "NodeUnschedulable" }

// Filter implements framework.FilterPlugin.
func (NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	if !n.Node.Spec.Unschedulable {
		return nil
	}
	if pod.ToleratesTaint(&core.Taint{Key: "node.kubernetes.io/unschedulable", Effect: core.TaintNoSchedule}) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) were unschedulable")
}
