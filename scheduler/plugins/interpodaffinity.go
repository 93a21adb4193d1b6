package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// InterPodAffinity enforces required pod affinity and anti-affinity over a
// topology key, both the incoming pod's and that of the pods already
// placed (a pod that says "not beside app=db" also keeps app=db pods away
// from it), as kube-scheduler's plugin of the same name does. Its scoring
// half is PreferredPodAffinity.
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
	// affinity counts pods matching all the incoming pod's affinity
	// terms; anti those matching any of its anti-affinity terms;
	// existingAnti the placed pods whose required anti-affinity selects
	// the incoming pod.
	affinity, anti, existingAnti map[topologyPair]int
	existingAntiKeys             []string // the topology keys in existingAnti
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
	for _, n := range state.AllNodes {
		if n.Node == nil {
			continue
		}
		labels := n.Node.Labels
		// Placed pods' anti-affinity against the incoming pod.
		for _, other := range n.PodsWithAffinity {
			for i := range other.RequiredAntiAffinity {
				t := &other.RequiredAntiAffinity[i]
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(other.Pod, pod) {
					st.existingAnti = inc(st.existingAnti, topologyPair{t.TopologyKey, v})
					if !contains(st.existingAntiKeys, t.TopologyKey) {
						st.existingAntiKeys = append(st.existingAntiKeys, t.TopologyKey)
					}
				}
			}
		}
		if st.pod == nil || (len(st.pod.RequiredAffinity) == 0 && len(st.pod.RequiredAntiAffinity) == 0) {
			continue
		}
		for _, other := range n.Pods {
			if other.DeletionTimestamp != nil {
				continue
			}
			if len(st.pod.RequiredAffinity) > 0 && matchesAll(st.pod.RequiredAffinity, pod, other) {
				for i := range st.pod.RequiredAffinity {
					if v, ok := labels[st.pod.RequiredAffinity[i].TopologyKey]; ok {
						st.affinity = inc(st.affinity, topologyPair{st.pod.RequiredAffinity[i].TopologyKey, v})
					}
				}
			}
			for i := range st.pod.RequiredAntiAffinity {
				t := &st.pod.RequiredAntiAffinity[i]
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(pod, other) {
					st.anti = inc(st.anti, topologyPair{t.TopologyKey, v})
				}
			}
		}
	}
	if st.pod != nil && len(st.pod.RequiredAffinity) > 0 && len(st.affinity) == 0 {
		st.selfMatch = matchesAll(st.pod.RequiredAffinity, pod, pod)
	}
	return nil
}

func inc(m map[topologyPair]int, p topologyPair) map[topologyPair]int {
	if m == nil {
		m = map[topologyPair]int{}
	}
	m[p]++
	return m
}

func matchesAll(ts []framework.AffinityTerm, owner, p *core.Pod) bool {
	for i := range ts {
		if !ts[i].Matches(owner, p) {
			return false
		}
	}
	return true
}

// Filter implements framework.FilterPlugin.
func (InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) *framework.Status {
	st, _ := state.Read(interPodKey).(*interPodState)
	if st == nil {
		return framework.NewStatus(framework.Error, "InterPodAffinity: PreFilter did not run")
	}
	labels := n.Node.Labels
	for _, key := range st.existingAntiKeys {
		if v, ok := labels[key]; ok && st.existingAnti[topologyPair{key, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, reasonExistingAntiRule)
		}
	}
	if st.pod == nil {
		return nil
	}
	for i := range st.pod.RequiredAntiAffinity {
		key := st.pod.RequiredAntiAffinity[i].TopologyKey
		if v, ok := labels[key]; ok && st.anti[topologyPair{key, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, reasonAntiAffinity)
		}
	}
	for i := range st.pod.RequiredAffinity {
		key := st.pod.RequiredAffinity[i].TopologyKey
		v, ok := labels[key]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonAffinity)
		}
		if st.affinity[topologyPair{key, v}] == 0 && !st.selfMatch {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonAffinity)
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
