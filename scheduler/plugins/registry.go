package plugins

import "github.com/kobune/kobune/scheduler/framework"

// DefaultFilters are the filters in the order they run: cheap ones first.
func DefaultFilters() []framework.FilterPlugin {
	return []framework.FilterPlugin{NodeUnschedulable{}, NodeName{}, NodeReady{}, TaintToleration{}, NodeAffinity{}, NodePorts{}, NodeResourcesFit{}}
}

// DefaultScores are the score plugins with their weights (kube-scheduler's
// defaults: TaintToleration 3, NodeAffinity 2, the others 1).
func DefaultScores() map[framework.ScorePlugin]int64 {
	return map[framework.ScorePlugin]int64{LeastAllocated{}: 1, BalancedAllocation{}: 1, PreferNoSchedule{}: 3, PreferredNodeAffinity{}: 2}
}
