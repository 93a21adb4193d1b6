// Package plugins holds the scheduler's filter and score plugins, one file
// each (with its own table test), mirroring kube-scheduler's in-tree plugins
// of the same names. Filters: NodeUnschedulable, NodeName, NodeReady,
// TaintToleration, NodeAffinity (nodeSelector and required node affinity),
// NodePorts, NodeResourcesFit, InterPodAffinity, PodTopologySpread
// (DoNotSchedule). Scores: LeastAllocated and MostAllocated (the two
// scoring strategies of Kubernetes' NodeResourcesFit), BalancedAllocation,
// and the scoring halves of TaintToleration (PreferNoSchedule),
// NodeAffinity (PreferredNodeAffinity), InterPodAffinity
// (PreferredPodAffinity) and PodTopologySpread (TopologySpreadScore,
// ScheduleAnyway), which carry their Kubernetes names. registry.go lists
// them with their default order and weights.
package plugins
