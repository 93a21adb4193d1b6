// Package scheduler is kobune-scheduler (kube-scheduler): it watches pods
// with no node, filters the nodes with the filter plugins (in parallel,
// stopping once enough feasible nodes are found, as percentageOfNodesToScore
// does), scores the feasible ones with weighted score plugins, assumes the
// pod onto the best node in its cache and binds it through the API in the
// background. A pod that fits nowhere gets a FailedScheduling event in
// Kubernetes' words ("0/3 nodes are available: 2 Insufficient cpu, ..."),
// may preempt pods of lower priority (nominatedNodeName), and is retried
// with back-off, and as soon as something changes that could help. Every
// decision is recorded — each node's verdict: the filter that rejected it
// and why, or its score per plugin, and the winner — in the pod's
// scheduler.kobune.io/decision annotation (set by the bind) or, when it
// fails, a SchedulingDecision event; `kobectl describe pod` shows it.
//
// Files: scheduler.go (the loop, the informers, the bind),
// schedule_one.go (one cycle: which nodes to filter, early stop, scoring,
// the winner), queue.go (active by priority then age, back-off,
// unschedulable), cache.go (nodes with their placed and assumed pods,
// nominations; a cycle reads it through cache.read), index.go (counts for
// spread and inter-pod affinity, kept up to date), preempt.go (carrying
// out the PostFilter's choice), decision.go (the record), config.go
// (--config: the profile), metrics.go. The framework (framework/) runs the
// plugins at each extension point; the plugins live in plugins/, one type
// per plugin. docs/scheduler.md is the user's guide.
//
// Leader election is done by the binary (cmd/kobune-scheduler), with
// client.LeaderElection on a Lease.
package scheduler
