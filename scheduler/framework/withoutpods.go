package framework

import (
	"maps"
	"slices"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/selector"
)

// WithoutPods is base as it would be if the removed pods (not terminating)
// left node: the question preemption asks for every set of victims it
// tries.
func WithoutPods(base ClusterIndex, node *core.Node, removed []*core.Pod) ClusterIndex {
	return &withoutPods{base: base, node: node, removed: removed}
}

// AddCount adds delta to m[k], deleting the entry when it reaches 0 (the
// index's counts hold no zeros).
func AddCount(m map[string]int, k string, delta int) {
	if n := m[k] + delta; n > 0 {
		m[k] = n
	} else {
		delete(m, k)
	}
}

// withoutPods is the cluster index as it would be if some pods left one
// node — the question preemption asks for every set of victims it tries
// (Kubernetes' PreFilter extensions RemovePod/AddPod do the same job). It
// answers from the cache's index minus the removed pods' share, so that the
// cross-node filters need not walk every node for every try.
type withoutPods struct {
	base    ClusterIndex
	node    *core.Node
	removed []*core.Pod // non-terminating pods taken off node
}

// RemovedPods returns the pods of all that are not in kept and not already
// terminating (terminating pods count nowhere).
func RemovedPods(all, kept []*core.Pod) []*core.Pod {
	in := make(map[*core.Pod]bool, len(kept))
	for _, p := range kept {
		in[p] = true
	}
	var out []*core.Pod
	for _, p := range all {
		if !in[p] && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// Domains implements ClusterIndex: nodes do not change.
func (w *withoutPods) Domains(key string) map[string]int { return w.base.Domains(key) }

// MatchingPods implements ClusterIndex.
func (w *withoutPods) MatchingPods(namespaces []string, sel selector.Selector, key string) map[string]int {
	counts := w.base.MatchingPods(namespaces, sel, key)
	v, ok := w.node.Labels[key]
	if !ok {
		return counts
	}
	n := 0
	for _, p := range w.removed {
		if slices.Contains(namespaces, p.Namespace) && sel.Matches(p.Labels) {
			n++
		}
	}
	if n == 0 {
		return counts
	}
	out := maps.Clone(counts)
	AddCount(out, v, -n)
	return out
}

// AntiAffinityTerms implements ClusterIndex.
func (w *withoutPods) AntiAffinityTerms() []*IndexedTerm {
	terms := w.base.AntiAffinityTerms()
	sub := map[string]map[string]int{} // term signature → topology value → holders removed
	for _, p := range w.removed {
		if a := p.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
			continue
		}
		pa := ParsePodAffinity(p)
		for i := range pa.RequiredAntiAffinity {
			t := &pa.RequiredAntiAffinity[i]
			v, ok := w.node.Labels[t.TopologyKey]
			if !ok {
				continue
			}
			sig := Signature(TermNamespaces(t, p), t.Selector, t.TopologyKey)
			if sub[sig] == nil {
				sub[sig] = map[string]int{}
			}
			sub[sig][v]++
		}
	}
	if len(sub) == 0 {
		return terms
	}
	out := make([]*IndexedTerm, 0, len(terms))
	for _, t := range terms {
		d, ok := sub[Signature(t.Namespaces, t.Selector, t.TopologyKey)]
		if !ok {
			out = append(out, t)
			continue
		}
		c := *t
		c.Counts = maps.Clone(t.Counts)
		for v, n := range d {
			AddCount(c.Counts, v, -n)
		}
		if len(c.Counts) > 0 { // no holder left: the term is gone
			out = append(out, &c)
		}
	}
	return out
}
