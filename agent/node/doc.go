// Package node is the agent's side of the Node object: it registers the
// node (name, addresses, capacity, allocatable, labels, taints, system
// info), keeps its conditions current, and renews the node's Lease in
// kube-node-lease as a heartbeat — the kubelet's node status manager and
// node lease controller.
package node
