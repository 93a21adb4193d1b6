package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/scheduler/framework"
)

func preferred(affinity bool, weight int32, key string, labels map[string]string) func(*core.Pod) {
	return func(p *core.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &core.Affinity{}
		}
		t := core.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: core.PodAffinityTerm{TopologyKey: key, LabelSelector: &meta.LabelSelector{MatchLabels: labels}}}
		if affinity {
			p.Spec.Affinity.PodAffinity = &core.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []core.WeightedPodAffinityTerm{t}}
		} else {
			p.Spec.Affinity.PodAntiAffinity = &core.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []core.WeightedPodAffinityTerm{t}}
		}
	}
}

func TestPreferredPodAffinity(t *testing.T) {
	web := map[string]string{"app": "web"}
	cache := map[string]string{"app": "cache"}
	withCache := func(name string, z string) *framework.NodeInfo {
		return ni(node(name, zone(z)), pod("", "", labeled("cache-"+name, cache)))
	}
	runScores(t, InterPodAffinity{}, []scoreCase{
		{name: "near a cache is best", pod: pod("", "", labeled("w", web), preferred(true, 50, "zone", cache)),
			nodes: []*framework.NodeInfo{ni(node("a1", zone("a"))), withCache("b1", "b"), ni(node("b2", zone("b")))}, want: []int64{0, 100, 100}},
		{name: "anti: away from a cache is best", pod: pod("", "", labeled("w", web), preferred(false, 50, "kubernetes.io/hostname", cache)),
			nodes: []*framework.NodeInfo{withCache("a1", "a"), ni(node("a2", zone("a")))}, want: []int64{0, 100}},
		{name: "a placed pod's preference attracts", pod: pod("", "", labeled("w", web)),
			nodes: []*framework.NodeInfo{ni(node("a1", zone("a"))), ni(node("b1", zone("b")), pod("", "", labeled("fan", cache), preferred(true, 10, "zone", web)))},
			want:  []int64{0, 100}},
		{name: "no terms anywhere: all 0", pod: pod("", "", labeled("w", web)),
			nodes: []*framework.NodeInfo{withCache("a1", "a"), ni(node("a2", zone("a")))}, want: []int64{0, 0}},
	})
}
