package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

func TestPreferNoSchedule(t *testing.T) {
	twoTaints := ni(node("t", func(n *core.Node) {
		n.Spec.Taints = []core.Taint{{Key: "spot", Effect: core.TaintPreferNoSchedule}, {Key: "old", Effect: core.TaintPreferNoSchedule}}
	}))
	oneTaint := ni(node("o", func(n *core.Node) {
		n.Spec.Taints = []core.Taint{{Key: "spot", Effect: core.TaintPreferNoSchedule}, {Key: "x", Effect: core.TaintNoSchedule}}
	}))
	runScores(t, TaintToleration{}, []scoreCase{
		{name: "fewer untolerated taints score higher", pod: pod("", ""),
			nodes: []*framework.NodeInfo{twoTaints, oneTaint, ni(node("clean"))}, want: []int64{0, 50, 100}},
		{name: "tolerated taints do not count", pod: pod("", "", func(p *core.Pod) {
			p.Spec.Tolerations = []core.Toleration{{Key: "spot", Operator: "Exists"}, {Key: "old", Operator: "Exists"}}
		}), nodes: []*framework.NodeInfo{twoTaints, ni(node("clean"))}, want: []int64{100, 100}},
	})
}
