// Package core holds the core ("v1") kinds: Namespace, Node, Pod, Service,
// Endpoints, ConfigMap, Secret and Event, with their defaulting and
// validation. Field names and JSON shapes are Kubernetes' (k8s.io/api/core/v1)
// so the same manifests apply to both systems.
package core
