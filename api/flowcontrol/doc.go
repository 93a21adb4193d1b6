// Package flowcontrol holds API Priority and Fairness' two kinds
// ("flowcontrol.apiserver.k8s.io/v1", as k8s.io/api/flowcontrol/v1):
// a FlowSchema sorts requests into flows by who sends them and what they
// ask, and names the PriorityLevelConfiguration whose seats and queues
// they share. It also holds the objects every cluster starts with
// (bootstrap.go, Kubernetes' mandatory and suggested configuration).
// The API server's apiserver/flowcontrol package enforces them.
package flowcontrol
