// Package rollout is kobectl rollout (status, history, undo, restart,
// pause, resume), scale, autoscale and set image: the
// commands that change a workload's replicas or template and follow what
// its controller makes of it. It mirrors kubectl's pkg/cmd/rollout,
// scale, autoscale and set.
package rollout
