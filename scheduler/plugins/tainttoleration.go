package plugins

import (
	"context"
	"fmt"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// TaintToleration rejects nodes with a NoSchedule or NoExecute taint the
// pod does not tolerate.
type TaintToleration struct{}

var _ framework.FilterPlugin = TaintToleration{}

// Name implements framework.Plugin.
func (TaintToleration) Name() string { return "TaintToleration" }

// Filter implements framework.FilterPlugin.
func (TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	for i := range n.Node.Spec.Taints {
		taint := &n.Node.Spec.Taints[i]
		if taint.Effect == core.TaintPreferNoSchedule {
			continue
		}
		if !tolerates(pod, taint) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
		}
	}
	return nil
}

// tolerates reports whether any of the pod's tolerations matches the taint.
func tolerates(pod *core.Pod, taint *core.Taint) bool {
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(taint) {
			return true
		}
	}
	return false
}
