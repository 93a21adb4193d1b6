// Package agent is kobune-agent, the node agent (Kubernetes' kubelet): it
// registers its Node, renews the node's Lease as a heartbeat, watches the
// pods bound to its node (spec.nodeName), runs them through a container
// runtime, reports their status, and confirms their deletion once their
// containers are gone.
//
// Files by role: agent.go (wiring, loops, the work queue), pod.go (one
// pod's reconcile and the restart policy), status.go (status from runtime
// state), server.go (the node API: logs and exec), metrics.go. Subpackages:
// runtime/ (containerd, and the simulated runtime), network/ (CNI, routes),
// probe/ (liveness, readiness, startup), node/ (Node and Lease), proxy/
// (Service rules in nftables: kube-proxy), dns/ (cluster DNS).
// docs/agent.md walks through a pod's start.
package agent
