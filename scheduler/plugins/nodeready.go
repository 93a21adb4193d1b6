package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodeReady rejects nodes whose Ready condition is not True. (Kubernetes
// does this through the not-ready taint the node lifecycle controller
// adds; until that controller exists, the condition is checked directly.)
type NodeReady struct{}

var _ framework.FilterPlugin = NodeReady{}

// Name implements framework.Plugin.
func (NodeReady) Name() string { return "NodeReady" }

// Filter implements framework.FilterPlugin.
func (NodeReady) Filter(_ context.Context, _ *framework.CycleState, _ *core.Pod, n *framework.NodeInfo) *framework.Status {
	for _, c := range n.Node.Status.Conditions {
		if c.Type == core.NodeReady && c.Status == meta.ConditionTrue {
			return nil
		}
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) were not ready")
}
