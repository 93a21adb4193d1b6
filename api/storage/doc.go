// Package storage holds StorageClass ("storage.k8s.io/v1"): a named kind
// of storage — which provisioner makes its volumes, with what parameters,
// when they are bound (at once, or once a pod is scheduled), and what
// happens to them when their claim goes.
package storage
