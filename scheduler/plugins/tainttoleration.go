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
	if taint := core.UntoleratedTaint(pod, n.Node); taint != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
	}
	return nil
}
