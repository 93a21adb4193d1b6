// Package drain is kobectl cordon, uncordon, drain and taint: a node
// taken out of service (its pods evicted through the eviction API, which
// PodDisruptionBudgets can refuse) and back. It mirrors kubectl's
// pkg/cmd/drain and taint.
package drain
