package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/scheduler/framework"
)

func spread(maxSkew int32, key, when string, labels map[string]string) func(*core.Pod) {
	return func(p *core.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, core.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: &meta.LabelSelector{MatchLabels: labels}})
	}
}

func webPods(n int) []*core.Pod {
	out := make([]*core.Pod, n)
	for i := range out {
		out[i] = pod("", "", labeled("web", map[string]string{"app": "web"}))
	}
	return out
}

func TestPodTopologySpread(t *testing.T) {
	web := map[string]string{"app": "web"}
	newWeb := func(mutate ...func(*core.Pod)) *core.Pod {
		return pod("", "", append([]func(*core.Pod){labeled("w", web)}, mutate...)...)
	}
	// Zone a has 2 web pods, zone b 1.
	a2 := ni(node("a", zone("a")), webPods(2)...)
	b1 := ni(node("b", zone("b")), webPods(1)...)
	runFilters(t, PodTopologySpread{}, []filterCase{
		{name: "to the emptier zone", pod: newWeb(spread(1, "zone", "DoNotSchedule", web)), node: b1, others: []*framework.NodeInfo{a2}},
		{name: "to the fuller zone: skew 2 > 1", pod: newWeb(spread(1, "zone", "DoNotSchedule", web)), node: a2, others: []*framework.NodeInfo{b1}, reason: reasonSpread},
		{name: "maxSkew 2 allows it", pod: newWeb(spread(2, "zone", "DoNotSchedule", web)), node: a2, others: []*framework.NodeInfo{b1}},
		{name: "a pod not matching its own selector adds nothing", pod: pod("", "", spread(1, "zone", "DoNotSchedule", web)), node: ni(node("a", zone("a")), webPods(1)...), others: []*framework.NodeInfo{ni(node("b", zone("b")))}},
		{name: "node without the key", pod: newWeb(spread(1, "rack", "DoNotSchedule", web)), node: a2, reason: reasonSpreadMissing},
		{name: "ScheduleAnyway does not filter", pod: newWeb(spread(1, "zone", "ScheduleAnyway", web)), node: a2, others: []*framework.NodeInfo{b1}},
		{name: "domains outside the pod's node affinity do not count", pod: newWeb(spread(1, "zone", "DoNotSchedule", web),
			func(p *core.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }), node: a2, others: []*framework.NodeInfo{ni(node("b", zone("b")))}},
		{name: "minDomains: too few domains, the minimum is 0", pod: newWeb(func(p *core.Pod) {
			spread(1, "zone", "DoNotSchedule", web)(p)
			two := int32(3)
			p.Spec.TopologySpreadConstraints[0].MinDomains = &two
		}), node: ni(node("a", zone("a")), webPods(1)...), others: []*framework.NodeInfo{ni(node("b", zone("b")), webPods(1)...)}, reason: reasonSpread},
	})
}

func TestTopologySpreadScore(t *testing.T) {
	web := map[string]string{"app": "web"}
	p := pod("", "", labeled("w", web), spread(1, "zone", "ScheduleAnyway", web))
	runScores(t, PodTopologySpread{}, []scoreCase{
		{name: "emptier zone scores higher", pod: p,
			nodes: []*framework.NodeInfo{ni(node("a", zone("a")), webPods(2)...), ni(node("b", zone("b")), webPods(1)...), ni(node("c", zone("c")))},
			want:  []int64{0, 50, 100}},
		{name: "node without the key scores 0", pod: p,
			nodes: []*framework.NodeInfo{ni(node("a", zone("a"))), ni(node("x", func(n *core.Node) { delete(n.Labels, "zone") }))},
			want:  []int64{100, 0}},
		{name: "no soft constraints: 0", pod: pod("", "", labeled("w", web)),
			nodes: []*framework.NodeInfo{ni(node("a", zone("a")), webPods(2)...)}, want: []int64{0}},
	})
}
