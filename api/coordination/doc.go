// Package coordination holds Lease ("coordination.k8s.io/v1"): a small object
// whose holder renews it, used for leader election and node heartbeats.
package coordination
