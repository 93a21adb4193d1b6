// Package framework is the scheduler's plugin contract, a small part of
// kube-scheduler's scheduling framework: PreFilter plugins compute what the
// filters need once per pod, Filter plugins say whether a pod fits a node
// and why not, PreScore and Score plugins rank the nodes that fit, 0–100,
// and a ScoreNormalizer rescales raw scores across the nodes. CycleState
// carries one attempt's data between them. NodeInfo is what a plugin sees
// of a node: the Node and the pods on it (including pods assumed there
// before their bind returns), their summed requests and their parsed
// affinity terms; ClusterIndex answers cluster-wide counting questions
// (pods matching a selector per topology domain) without walking every pod.
// Framework (runtime.go) runs a profile's plugins at each extension point
// — PreFilter, Filter, PreScore/Score/Normalize with weights, PostFilter —
// and is the Handle PostFilter plugins (preemption) run the filters
// through.
package framework
