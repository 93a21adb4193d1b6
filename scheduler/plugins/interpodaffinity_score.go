package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// InterPodAffinity's score half (PreScore, Score, Normalize): a node gains
// the weight of each preferred affinity term of the incoming pod that a pod
// in its topology domain matches, and loses it for each preferred
// anti-affinity term; placed pods' terms that select the incoming pod count
// the same way (their required affinity with weight 1, kube-scheduler's
// hardPodAffinityWeight). Scores are rescaled so the best node gets 100
// and the worst 0. The filter half is in interpodaffinity.go.

var (
	_ framework.PreScorePlugin  = InterPodAffinity{}
	_ framework.ScorePlugin     = InterPodAffinity{}
	_ framework.ScoreNormalizer = InterPodAffinity{}
)

const preferredPodKey = "PreferredPodAffinity"

type preferredPodState struct {
	scores map[topologyPair]int64
	keys   []string
}

func (s *preferredPodState) add(labels map[string]string, key string, w int64) {
	v, ok := labels[key]
	if !ok || w == 0 {
		return
	}
	if s.scores == nil {
		s.scores = map[topologyPair]int64{}
	}
	s.scores[topologyPair{key, v}] += w
	if !contains(s.keys, key) {
		s.keys = append(s.keys, key)
	}
}

// hardPodAffinityWeight is what a placed pod's required affinity term
// selecting the incoming pod adds (kube-scheduler's default).
const hardPodAffinityWeight = 1

// PreScore implements framework.PreScorePlugin.
func (InterPodAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *core.Pod, _ []*framework.NodeInfo) *framework.Status {
	st := &preferredPodState{}
	state.Write(preferredPodKey, st)
	own := framework.ParsePodAffinity(pod)
	hasPreferred := own != nil && (len(own.PreferredAffinity) > 0 || len(own.PreferredAnti) > 0)
	for _, n := range state.AllNodes {
		if n.Node == nil {
			continue
		}
		labels := n.Node.Labels
		if hasPreferred {
			for _, other := range n.Pods {
				for i := range own.PreferredAffinity {
					if t := &own.PreferredAffinity[i]; t.Matches(pod, other) {
						st.add(labels, t.TopologyKey, t.Weight)
					}
				}
				for i := range own.PreferredAnti {
					if t := &own.PreferredAnti[i]; t.Matches(pod, other) {
						st.add(labels, t.TopologyKey, -t.Weight)
					}
				}
			}
		}
		for _, other := range n.PodsWithAffinity {
			for i := range other.RequiredAffinity {
				if t := &other.RequiredAffinity[i]; t.Matches(other.Pod, pod) {
					st.add(labels, t.TopologyKey, hardPodAffinityWeight)
				}
			}
			for i := range other.PreferredAffinity {
				if t := &other.PreferredAffinity[i]; t.Matches(other.Pod, pod) {
					st.add(labels, t.TopologyKey, t.Weight)
				}
			}
			for i := range other.PreferredAnti {
				if t := &other.PreferredAnti[i]; t.Matches(other.Pod, pod) {
					st.add(labels, t.TopologyKey, -t.Weight)
				}
			}
		}
	}
	return nil
}

// Score implements framework.ScorePlugin: the raw sum for the node's
// topology pairs (may be negative; Normalize rescales).
func (InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	st, _ := state.Read(preferredPodKey).(*preferredPodState)
	if st == nil {
		return 0, framework.NewStatus(framework.Error, "InterPodAffinity: PreScore did not run")
	}
	var sum int64
	for _, key := range st.keys {
		if v, ok := n.Node.Labels[key]; ok {
			sum += st.scores[topologyPair{key, v}]
		}
	}
	return sum, nil
}

// Normalize implements framework.ScoreNormalizer: min→0, max→100 (all 0
// when every node scored the same).
func (InterPodAffinity) Normalize(scores []int64) { normalizeRange(scores, false) }
