package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

func TestPreferredNodeAffinity(t *testing.T) {
	pref := pod("", "", func(p *core.Pod) {
		p.Spec.Affinity = &core.Affinity{NodeAffinity: &core.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []core.PreferredSchedulingTerm{
			{Weight: 80, Preference: core.NodeSelectorTerm{MatchExpressions: []core.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"b"}}}}},
			{Weight: 20, Preference: core.NodeSelectorTerm{MatchExpressions: []core.NodeSelectorRequirement{{Key: "gpus", Operator: "Exists"}}}},
		}}}
	})
	runScores(t, NodeAffinity{}, []scoreCase{
		{name: "weights add up; best is 100", pod: pref,
			nodes: []*framework.NodeInfo{ni(node("b", zone("b"))), ni(node("a"))}, want: []int64{100, 20}},
		{name: "no preferences: all 0", pod: pod("", ""),
			nodes: []*framework.NodeInfo{ni(node("b", zone("b"))), ni(node("a"))}, want: []int64{0, 0}},
	})
}
