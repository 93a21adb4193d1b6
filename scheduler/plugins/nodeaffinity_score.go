package plugins

import (
	"context"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/scheduler/framework"
)

// NodeAffinity's score half (Score, Normalize) sums the weights of the
// pod's preferred node affinity terms a node matches; its filter half is in
// nodeaffinity.go.

var (
	_ framework.ScorePlugin     = NodeAffinity{}
	_ framework.ScoreNormalizer = NodeAffinity{}
)

// Score implements framework.ScorePlugin.
func (NodeAffinity) Score(_ context.Context, _ *framework.CycleState, pod *core.Pod, n *framework.NodeInfo) (int64, *framework.Status) {
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
func (NodeAffinity) Normalize(scores []int64) { normalize(scores, false) }
