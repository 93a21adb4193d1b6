// Package apps holds the workload kinds of the "apps/v1" group: ReplicaSet,
// Deployment, DaemonSet and StatefulSet, and the ControllerRevisions that
// keep the templates DaemonSets and StatefulSets had (their rollout
// history), with their defaulting and validation, shaped like Kubernetes'
// k8s.io/api/apps/v1.
package apps
