package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// InterPodAffinity enforces required pod affinity and anti-affinity over a
// topology key, both the incoming pod's and that of the pods already
// placed (a pod that says "not beside app=db" also keeps app=db pods away
// from it), as kube-scheduler's plugin of the same name does. Its score
// half (preferred terms) is in interpodaffinity_score.go.
//
// PreFilter walks every placed pod once and counts, per topology pair
// (key, value): the pods matching all the incoming pod's affinity terms,
// the pods matching its anti-affinity terms, and the placed pods whose
// anti-affinity terms select the incoming pod. Filter then only looks up
// the node's own values.
type InterPodAffinity struct{}

var (
	_ framework.PreFilterPlugin = InterPodAffinity{}
	_ framework.FilterPlugin    = InterPodAffinity{}
)

// Name implements framework.Plugin.
func (InterPodAffinity) Name() string { return "InterPodAffinity" }

// Reasons, in kube-scheduler's words.
const (
	reasonAffinity         = "node(s) didn't match pod affinity rules"
	reasonAntiAffinity     = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAntiRule = "node(s) didn't satisfy existing pods anti-affinity rules"
)

type topologyPair struct{ key, value string }

type interPodState struct {
	pod *framework.PodAffinity // the incoming pod's terms (nil: none)
	// affinity[i] and anti[i] count, per value of the i-th term's
	// topology key, the pods matching the incoming pod's i-th required
	// affinity (all terms, for affinity) and anti-affinity term.
	affinity, anti []map[string]int
	// existing are the placed pods' anti-affinity terms that select the
	// incoming pod, with their holders per topology value.
	existing []*framework.IndexedTerm
	// selfMatch: no pod matches the affinity terms but the incoming pod
	// matches them itself (the first pod of a group that wants to be
	// together may go anywhere).
	selfMatch bool
}

const interPodKey = "InterPodAffinity"

// PreFilter implements framework.PreFilterPlugin.
func (InterPodAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *core.Pod) *framework.Status {
	st := &interPodState{pod: framework.ParsePodAffinity(pod)}
	state.Write(interPodKey, st)
	if state.Index != nil {
		for _, t := range state.Index.AntiAffinityTerms() {
			if t.Selects(pod) {
				st.existing = append(st.existing, t)
			}
		}
	} else {
		st.existing = existingAntiAffinity(pod, state.AllNodes)
	}
	if st.pod == nil {
		return nil
	}
	for i := range st.pod.RequiredAntiAffinity {
		st.anti = append(st.anti, countTerms(state, pod, st.pod.RequiredAntiAffinity[i:i+1], st.pod.RequiredAntiAffinity[i].TopologyKey))
	}
	if len(st.pod.RequiredAffinity) > 0 {
		any := false
		for i := range st.pod.RequiredAffinity {
			counts := countTerms(state, pod, st.pod.RequiredAffinity, st.pod.RequiredAffinity[i].TopologyKey)
			any = any || len(counts) > 0
			st.affinity = append(st.affinity, counts)
		}
		st.selfMatch = !any && matchesAll(st.pod.RequiredAffinity, pod, pod)
	}
	return nil
}

// countTerms counts the placed, non-terminating pods matching all the
// terms, per value of key: from the index for a single term, else by
// walking every node.
func countTerms(state *framework.CycleState, owner *core.Pod, ts []framework.AffinityTerm, key string) map[string]int {
	if state.Index != nil && len(ts) == 1 {
		return state.Index.MatchingPods(framework.TermNamespaces(&ts[0], owner), ts[0].Selector, key)
	}
	counts := map[string]int{}
	for _, n := range state.AllNodes {
		if n.Node == nil {
			continue
		}
		v, ok := n.Node.Labels[key]
		if !ok {
			continue
		}
		for _, other := range n.Pods {
			if other.DeletionTimestamp == nil && matchesAll(ts, owner, other) {
				counts[v]++
			}
		}
	}
	return counts
}

// existingAntiAffinity walks every placed pod for required anti-affinity
// terms that select pod (what the index keeps ready).
func existingAntiAffinity(pod *core.Pod, nodes []*framework.NodeInfo) []*framework.IndexedTerm {
	bySig := map[string]*framework.IndexedTerm{}
	var out []*framework.IndexedTerm
	for _, n := range nodes {
		if n.Node == nil {
			continue
		}
		for _, other := range n.PodsWithAffinity {
			if other.Pod.DeletionTimestamp != nil {
				continue
			}
			for i := range other.RequiredAntiAffinity {
				t := &other.RequiredAntiAffinity[i]
				v, ok := n.Node.Labels[t.TopologyKey]
				if !ok || !t.Matches(other.Pod, pod) {
					continue
				}
				ns := framework.TermNamespaces(t, other.Pod)
				sig := framework.Signature(ns, t.Selector, t.TopologyKey)
				it, ok := bySig[sig]
				if !ok {
					it = &framework.IndexedTerm{Namespaces: ns, Selector: t.Selector, TopologyKey: t.TopologyKey, Counts: map[string]int{}}
					bySig[sig] = it
					out = append(out, it)
				}
				it.Counts[v]++
			}
		}
	}
	return out
}

func matchesAll(ts []framework.AffinityTerm, owner, p *core.Pod) bool {
	for i := range ts {
		if !ts[i].Matches(owner, p) {
			return false
		}
	}
	return true
}

// Filter implements framework.FilterPlugin. The checks run in
// kube-scheduler's order: the pod's affinity, its anti-affinity, then the
// placed pods' anti-affinity.
func (InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	st, _ := state.Read(interPodKey).(*interPodState)
	if st == nil {
		return framework.NewStatus(framework.Error, "InterPodAffinity: PreFilter did not run")
	}
	labels := n.Node.Labels
	if st.pod != nil {
		for i := range st.pod.RequiredAffinity {
			v, ok := labels[st.pod.RequiredAffinity[i].TopologyKey]
			if !ok || (st.affinity[i][v] == 0 && !st.selfMatch) {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonAffinity)
			}
		}
		for i := range st.pod.RequiredAntiAffinity {
			if v, ok := labels[st.pod.RequiredAntiAffinity[i].TopologyKey]; ok && st.anti[i][v] > 0 {
				return framework.NewStatus(framework.Unschedulable, reasonAntiAffinity)
			}
		}
	}
	for _, t := range st.existing {
		if v, ok := labels[t.TopologyKey]; ok && t.Counts[v] > 0 {
			return framework.NewStatus(framework.Unschedulable, reasonExistingAntiRule)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
