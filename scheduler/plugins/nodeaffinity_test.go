package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
)

func required(reqs ...core.NodeSelectorRequirement) func(*core.Pod) {
	return func(p *core.Pod) {
		p.Spec.Affinity = &core.Affinity{NodeAffinity: &core.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &core.NodeSelector{
			NodeSelectorTerms: []core.NodeSelectorTerm{{MatchExpressions: reqs}}}}}
	}
}

func TestNodeAffinity(t *testing.T) {
	const no = "node(s) didn't match Pod's node affinity/selector"
	runFilters(t, NodeAffinity{}, []filterCase{
		{name: "nodeSelector matches", pod: pod("", "", func(p *core.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }), node: ni(node("n"))},
		{name: "nodeSelector differs", pod: pod("", "", func(p *core.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }), node: ni(node("n")), reason: no},
		{name: "In", pod: pod("", "", required(core.NodeSelectorRequirement{Key: "zone", Operator: "In", Values: []string{"a", "b"}})), node: ni(node("n"))},
		{name: "NotIn", pod: pod("", "", required(core.NodeSelectorRequirement{Key: "zone", Operator: "NotIn", Values: []string{"a"}})), node: ni(node("n")), reason: no},
		{name: "Exists", pod: pod("", "", required(core.NodeSelectorRequirement{Key: "gpus", Operator: "Exists"})), node: ni(node("n"))},
		{name: "DoesNotExist", pod: pod("", "", required(core.NodeSelectorRequirement{Key: "gpus", Operator: "DoesNotExist"})), node: ni(node("n")), reason: no},
		{name: "Gt", pod: pod("", "", required(core.NodeSelectorRequirement{Key: "gpus", Operator: "Gt", Values: []string{"1"}})), node: ni(node("n"))},
		{name: "Lt", pod: pod("", "", required(core.NodeSelectorRequirement{Key: "gpus", Operator: "Lt", Values: []string{"2"}})), node: ni(node("n")), reason: no},
		{name: "Gt on a missing label", pod: pod("", "", required(core.NodeSelectorRequirement{Key: "cores", Operator: "Gt", Values: []string{"1"}})), node: ni(node("n")), reason: no},
		{name: "expressions are ANDed", pod: pod("", "", required(
			core.NodeSelectorRequirement{Key: "zone", Operator: "In", Values: []string{"a"}},
			core.NodeSelectorRequirement{Key: "gpus", Operator: "Gt", Values: []string{"4"}})), node: ni(node("n")), reason: no},
		{name: "terms are ORed", pod: pod("", "", func(p *core.Pod) {
			p.Spec.Affinity = &core.Affinity{NodeAffinity: &core.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &core.NodeSelector{
				NodeSelectorTerms: []core.NodeSelectorTerm{
					{MatchExpressions: []core.NodeSelectorRequirement{{Key: "zone", Operator: "In", Values: []string{"b"}}}},
					{MatchFields: []core.NodeSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{"n"}}}},
				}}}}
		}), node: ni(node("n"))},
	})
}
