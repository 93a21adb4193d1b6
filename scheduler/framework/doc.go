// Package framework is the scheduler's plugin contract, a small part of
// kube-scheduler's framework: Filter plugins say whether a pod fits a node
// and why not; Score plugins rank the nodes that fit, 0–100. NodeInfo is
// what a plugin sees of a node: the Node and the pods on it (including pods
// assumed there before their bind returns), with their requests summed.
package framework
