// Package plugins holds the scheduler's filter and score plugins, one file
// each, mirroring kube-scheduler's in-tree plugins of the same names:
// NodeUnschedulable, NodeName, NodeReady, NodeResourcesFit, NodeAffinity
// (nodeSelector and required node affinity), NodePorts and TaintToleration
// filter; LeastAllocated, BalancedAllocation, TaintToleration
// (PreferNoSchedule) and NodeAffinity (preferred terms) score. Registry lists them in a plain map.
package plugins
