package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodePorts rejects a node where another pod already uses a hostPort (with
// the same protocol and an overlapping hostIP) that the pod asks for
// (core.HostPortsConflict, which the agent's admission asks too).
type NodePorts struct{}

var _ framework.FilterPlugin = NodePorts{}

// Name implements framework.Plugin.
func (NodePorts) Name() string { return "NodePorts" }

// Filter implements framework.FilterPlugin.
func (NodePorts) Filter(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	if !core.HasHostPorts(pod) {
		return nil
	}
	for _, other := range n.Pods {
		if core.HostPortsConflict(pod, other) {
			return framework.NewStatus(framework.Unschedulable, nodePortsReason)
		}
	}
	return nil
}

// nodePortsReason is the filter's message (the kubelet's admission says the
// same, agent/admission.go).
const nodePortsReason = "node(s) didn't have free ports for the requested pod ports"
