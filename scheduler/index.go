package scheduler

import (
	"slices"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/scheduler/framework"
)

// index is the cache's framework.ClusterIndex: counts that the spread and
// inter-pod affinity plugins would otherwise recompute from every placed
// pod for every pod they schedule (kube-scheduler does recompute them; at
// thousands of pods that is most of its time).
//
//   - counters: for a (namespaces, selector, topology key) asked about
//     once, the matching pods per topology value, then kept up to date as
//     pods come and go (at most maxCounters, the least recently used go);
//   - domains: nodes per value of a topology key, built when first asked;
//   - anti: every distinct required anti-affinity term of the placed pods,
//     with the pods holding it per topology value.
//
// A node whose labels change, or that appears after its pods, resets the
// index (rare; it is rebuilt on demand). The index is read and extended
// only by the scheduling goroutine under the cache's read lock, and
// changed by events under the write lock.
type index struct {
	cache    *cache
	counters map[string]*counter
	domains  map[string]map[string]int
	anti     map[string]*antiTerm
	antiList []*framework.IndexedTerm // nil: rebuild from anti
	clock    uint64
}

type counter struct {
	namespaces []string
	sel        selector.Selector
	key        string
	counts     map[string]int
	used       uint64
}

type antiTerm struct {
	framework.IndexedTerm
	total int
}

const maxCounters = 128

func newIndex(c *cache) *index {
	x := &index{cache: c}
	x.reset()
	return x
}

func (x *index) reset() {
	x.counters = map[string]*counter{}
	x.domains = map[string]map[string]int{}
	x.anti = map[string]*antiTerm{}
	x.antiList = nil
	for _, ni := range x.cache.nodes {
		if ni.Node == nil {
			continue
		}
		for _, pa := range ni.PodsWithAffinity {
			x.addAnti(pa, ni.Node, 1)
		}
	}
}

// podChanged counts a pod placed on (sign 1) or taken off (−1) a node.
func (x *index) podChanged(p *core.Pod, node *core.Node, sign int) {
	if node == nil || p.DeletionTimestamp != nil {
		return
	}
	for _, c := range x.counters {
		if v, ok := node.Labels[c.key]; ok && slices.Contains(c.namespaces, p.Namespace) && c.sel.Matches(p.Labels) {
			framework.AddCount(c.counts, v, sign)
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		x.addAnti(framework.ParsePodAffinity(p), node, sign)
	}
}

func (x *index) addAnti(pa *framework.PodAffinity, node *core.Node, sign int) {
	if pa.Pod.DeletionTimestamp != nil {
		return
	}
	for i := range pa.RequiredAntiAffinity {
		t := &pa.RequiredAntiAffinity[i]
		v, ok := node.Labels[t.TopologyKey]
		if !ok {
			continue
		}
		ns := framework.TermNamespaces(t, pa.Pod)
		sig := framework.Signature(ns, t.Selector, t.TopologyKey)
		it, ok := x.anti[sig]
		if !ok {
			if sign < 0 {
				continue
			}
			it = &antiTerm{IndexedTerm: framework.IndexedTerm{Namespaces: ns, Selector: t.Selector, TopologyKey: t.TopologyKey, Counts: map[string]int{}}}
			x.anti[sig] = it
			x.antiList = nil
		}
		framework.AddCount(it.Counts, v, sign)
		if it.total += sign; it.total <= 0 {
			delete(x.anti, sig)
			x.antiList = nil
		}
	}
}

// MatchingPods implements framework.ClusterIndex.
func (x *index) MatchingPods(namespaces []string, sel selector.Selector, key string) map[string]int {
	x.clock++
	sig := framework.Signature(namespaces, sel, key)
	if c, ok := x.counters[sig]; ok {
		c.used = x.clock
		return c.counts
	}
	if len(x.counters) >= maxCounters {
		var oldest *counter
		var oldestSig string
		for s, c := range x.counters {
			if oldest == nil || c.used < oldest.used {
				oldest, oldestSig = c, s
			}
		}
		delete(x.counters, oldestSig)
	}
	c := &counter{namespaces: namespaces, sel: sel, key: key, counts: map[string]int{}, used: x.clock}
	for _, ni := range x.cache.nodes {
		if ni.Node == nil {
			continue
		}
		v, ok := ni.Node.Labels[key]
		if !ok {
			continue
		}
		for _, p := range ni.Pods {
			if p.DeletionTimestamp == nil && slices.Contains(namespaces, p.Namespace) && sel.Matches(p.Labels) {
				c.counts[v]++
			}
		}
	}
	x.counters[sig] = c
	return c.counts
}

// Domains implements framework.ClusterIndex.
func (x *index) Domains(key string) map[string]int {
	if d, ok := x.domains[key]; ok {
		return d
	}
	d := map[string]int{}
	for _, ni := range x.cache.nodes {
		if ni.Node == nil {
			continue
		}
		if v, ok := ni.Node.Labels[key]; ok {
			d[v]++
		}
	}
	x.domains[key] = d
	return d
}

// nodeAdded counts a new node in the domains already built.
func (x *index) nodeAdded(n *core.Node, sign int) {
	for key, d := range x.domains {
		if v, ok := n.Labels[key]; ok {
			framework.AddCount(d, v, sign)
		}
	}
}

// AntiAffinityTerms implements framework.ClusterIndex.
func (x *index) AntiAffinityTerms() []*framework.IndexedTerm {
	if x.antiList == nil {
		x.antiList = make([]*framework.IndexedTerm, 0, len(x.anti))
		for _, t := range x.anti {
			x.antiList = append(x.antiList, &t.IndexedTerm)
		}
	}
	return x.antiList
}
