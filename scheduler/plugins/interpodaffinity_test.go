package plugins

import (
	"testing"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/scheduler/framework"
)

func affinityTerm(key string, labels map[string]string) core.PodAffinityTerm {
	return core.PodAffinityTerm{TopologyKey: key, LabelSelector: &meta.LabelSelector{MatchLabels: labels}}
}

func withAffinity(terms ...core.PodAffinityTerm) func(*core.Pod) {
	return func(p *core.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &core.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &core.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

func withAntiAffinity(terms ...core.PodAffinityTerm) func(*core.Pod) {
	return func(p *core.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &core.Affinity{}
		}
		p.Spec.Affinity.PodAntiAffinity = &core.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}
	}
}

func TestInterPodAffinity(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	const host = "kubernetes.io/hostname"
	// Two nodes in zone a (n, m), one in zone b (o).
	dbOnM := ni(node("m"), pod("", "", labeled("db-0", db)))
	dbOnO := ni(node("o", zone("b")), pod("", "", labeled("db-0", db)))
	otherNS := pod("", "", labeled("db-x", db), func(p *core.Pod) { p.Namespace = "other" })
	runFilters(t, InterPodAffinity{}, []filterCase{
		{name: "affinity: a matching pod in the same zone", pod: pod("", "", labeled("w", web), withAffinity(affinityTerm("zone", db))),
			node: ni(node("n")), others: []*framework.NodeInfo{dbOnM}},
		{name: "affinity: matching pod only in another zone", pod: pod("", "", labeled("w", web), withAffinity(affinityTerm("zone", db))),
			node: ni(node("n")), others: []*framework.NodeInfo{dbOnO}, reason: reasonAffinity},
		{name: "affinity: same zone but hostname key", pod: pod("", "", labeled("w", web), withAffinity(affinityTerm(host, db))),
			node: ni(node("n")), others: []*framework.NodeInfo{dbOnM}, reason: reasonAffinity},
		{name: "affinity: a pod in another namespace does not count", pod: pod("", "", labeled("w", web), withAffinity(affinityTerm("zone", db))),
			node: ni(node("n"), otherNS), others: []*framework.NodeInfo{dbOnO}, reason: reasonAffinity},
		{name: "affinity: the first pod of a group that selects itself", pod: pod("", "", labeled("db-1", db), withAffinity(affinityTerm("zone", db))),
			node: ni(node("n"))},
		{name: "affinity: node without the topology key", pod: pod("", "", labeled("w", web), withAffinity(affinityTerm("rack", db))),
			node: ni(node("n")), others: []*framework.NodeInfo{dbOnM}, reason: reasonAffinity},
		{name: "anti-affinity: a matching pod on the node", pod: pod("", "", labeled("w", web), withAntiAffinity(affinityTerm(host, db))),
			node: ni(node("n"), pod("", "", labeled("db-0", db))), reason: reasonAntiAffinity},
		{name: "anti-affinity: matching pod on another node, hostname key", pod: pod("", "", labeled("w", web), withAntiAffinity(affinityTerm(host, db))),
			node: ni(node("n")), others: []*framework.NodeInfo{dbOnM}},
		{name: "anti-affinity: matching pod elsewhere in the zone", pod: pod("", "", labeled("w", web), withAntiAffinity(affinityTerm("zone", db))),
			node: ni(node("n")), others: []*framework.NodeInfo{dbOnM}, reason: reasonAntiAffinity},
		{name: "anti-affinity: in another namespace listed by the term", pod: pod("", "", labeled("w", web), withAntiAffinity(core.PodAffinityTerm{
			TopologyKey: host, LabelSelector: &meta.LabelSelector{MatchLabels: db}, Namespaces: []string{"other"}})),
			node: ni(node("n"), otherNS), reason: reasonAntiAffinity},
		{name: "existing pod's anti-affinity keeps the pod away", pod: pod("", "", labeled("w", web)),
			node: ni(node("n")), others: []*framework.NodeInfo{ni(node("m"), pod("", "", labeled("loner", db), withAntiAffinity(affinityTerm("zone", web))))},
			reason: reasonExistingAntiRule},
		{name: "existing pod's anti-affinity, other zone", pod: pod("", "", labeled("w", web)),
			node: ni(node("n")), others: []*framework.NodeInfo{ni(node("o", zone("b")), pod("", "", labeled("loner", db), withAntiAffinity(affinityTerm("zone", web))))}},
	})
}
