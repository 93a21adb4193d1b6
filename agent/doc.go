// Package agent is kobune-agent, the node agent: Kubernetes' kubelet and
// kube-proxy in one process. It registers its Node and renews its Lease
// (the heartbeat), watches the pods bound to its node, runs them through a
// container runtime (volumes, a sandbox with its network, the containers,
// probes, restarts with back-off), reports their status, confirms their
// deletion once their containers are gone, evicts pods under node
// pressure, rotates its certificates, and programs the node's Service
// rules, NetworkPolicy and cluster DNS.
//
// This package wires those together (agent.go: the Node, its Lease and
// status) and holds the parts that follow the API on their own, each a
// type with its own informers and Run: the pod workers (podworkers.go,
// the kubelet's pod workers: one pod's sync in pod.go, its status in
// status.go, what the node did about each pod in podrecords.go, the
// kubelet's pod sync status), the eviction manager (evictionmanager.go),
// the Service proxy (serviceproxy.go, kube-proxy), the NetworkPolicy
// enforcer (networkpolicy.go), the cluster DNS (clusterdns.go) and the
// CSI driver registrar (csi.go). Each
// concern's mechanism has its subpackage (the runtime, the network,
// probes, the Node and Lease, the nftables rules of proxy and netpol,
// DNS, volumes, eviction's rules, usage). docs/agent.md walks
// through a pod's start; docs/reading-order.md says which files to read
// first.
package agent
