// Package scheduler is kobune-scheduler (kube-scheduler): it watches pods
// with no node, runs the filter plugins over every node, scores the nodes
// that fit, assumes the pod onto the best one in its cache and binds it
// through the API. A pod that fits nowhere gets a FailedScheduling event in
// Kubernetes' words ("0/3 nodes are available: 2 Insufficient cpu, ...")
// and is retried with back-off, and at once when a node changes. Every
// attempt also leaves a SchedulingDecision event — each node's verdict: the
// filter that rejected it and why, or its score per plugin, and the winner —
// which `kobectl describe pod` lists.
//
// Files: scheduler.go (the loop, the cache snapshot, the decision record),
// queue.go (active by priority then age, back-off, unschedulable), metrics.go.
// Plugins live in plugins/, one file each; the contract in framework/.
//
// Not yet (issue #4): preemption, pod (anti-)affinity,
// topology spread, the score plugins beyond LeastAllocated, a config file.
// (Leader election is done
// by the binary, with client.LeaderElection on a Lease.)
package scheduler
