// Package agent is kobune-agent, the node agent: Kubernetes' kubelet and
// kube-proxy in one process. It registers its Node and renews its Lease
// (the heartbeat), watches the pods bound to its node, runs them through a
// container runtime (volumes, a sandbox with its network, the containers,
// probes, restarts with back-off), reports their status, confirms their
// deletion once their containers are gone, evicts pods under node
// pressure, rotates its certificates, and programs the node's Service
// rules, NetworkPolicy and cluster DNS.
//
// This package wires those together and keeps one pod's sync (pod.go) and
// its status (status.go); each concern has its subpackage (the runtime,
// the network, probes, the Node and Lease, the Service proxy,
// NetworkPolicy, DNS, volumes, eviction, usage). docs/agent.md walks
// through a pod's start; docs/reading-order.md says which files to read
// first.
package agent
