// Package describe is kobectl describe: an object in words — for a
// pod its containers, conditions, volumes, events and, while Pending,
// every node's verdict from the scheduler; for workloads their pod
// template; for nodes, Services, Ingresses, NetworkPolicies, quotas and
// budgets what kubectl shows. It mirrors kubectl's pkg/describe.
package describe
