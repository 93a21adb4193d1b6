package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// PreferredNodeAffinity sums the weights of the pod's preferred node
// affinity terms a node matches (the scoring half of NodeAffinity).
type PreferredNodeAffinity struct{}

var (
	_ framework.ScorePlugin     = PreferredNodeAffinity{}
	_ framework.ScoreNormalizer = PreferredNodeAffinity{}
)

// Name implements framework.Plugin.
func (PreferredNodeAffinity) Name() string { return "NodeAffinity" }

// Score implements framework.ScorePlugin.
func (PreferredNodeAffinity) Score(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return 0, nil
	}
	var sum int64
	for _, p := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if core.NodeSelectorTermMatches(p.Preference, n.Node.Labels, n.Node.Name) {
			sum += int64(p.Weight)
		}
	}
	return sum, nil
}

// Normalize implements framework.ScoreNormalizer: the best node gets 100.
func (PreferredNodeAffinity) Normalize(scores []int64) { normalize(scores, false) }
