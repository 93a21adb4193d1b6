// Package agent is kobune-agent, the node agent (Kubernetes' kubelet): it
// registers its Node, renews the node's Lease as a heartbeat, watches the
// pods bound to its node (spec.nodeName), runs them through a container
// runtime, reports their status, and confirms their deletion once their
// containers are gone.
//
// Files by role: agent.go (wiring, loops, the pod work queue), pod.go (one
// pod's reconcile: run, report, stop), status.go (pod status from runtime
// state). Subpackages: runtime/ (the runtime interface, containerd, and
// the simulated runtime), network/ (pod namespaces through CNI, routes to
// other nodes), node/ (Node registration and Lease).
//
// Still to come (issue #3): restarts with CrashLoopBackOff, probes, cgroup
// limits and QoS parents, logs and exec through the API server, service
// rules and DNS.
package agent
