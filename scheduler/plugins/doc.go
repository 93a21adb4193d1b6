// Package plugins holds the scheduler's plugins, one type per plugin under
// its kube-scheduler name, with each of its extension points as methods
// (a plugin with a filter and a score half keeps the score half in
// <name>_score.go), each with its own table test. Filters:
// NodeUnschedulable, NodeName, NodeReady, TaintToleration, NodeAffinity
// (nodeSelector and required node affinity), NodePorts, NodeResourcesFit,
// InterPodAffinity, PodTopologySpread (DoNotSchedule). Scores:
// LeastAllocated and MostAllocated (the two scoring strategies of
// Kubernetes' NodeResourcesFit), BalancedAllocation, TaintToleration
// (PreferNoSchedule taints), NodeAffinity (preferred terms),
// InterPodAffinity (preferred terms) and PodTopologySpread
// (ScheduleAnyway). PostFilter: DefaultPreemption. registry.go lists them
// with their default order and weights.
package plugins
