// Package agent is kobune-agent, the node agent (Kubernetes' kubelet): it
// registers its Node, renews the node's Lease as a heartbeat, watches the
// pods bound to its node (spec.nodeName), runs them through a container
// runtime, reports their status, and confirms their deletion once their
// containers are gone.
//
// Files by role: agent.go (wiring, loops, the pod work queue), pod.go (one
// pod's reconcile: run, report, stop), status.go (pod status from runtime
// state). Subpackages: runtime/ (the runtime interface and the simulated
// runtime; containerd comes next), node/ (Node registration and Lease).
//
// Today only the simulated runtime exists (`--runtime fake`): pods go
// Running at once with a fake IP and nothing is executed. Real containers
// on containerd and CNI are the rest of issue #3.
package agent
