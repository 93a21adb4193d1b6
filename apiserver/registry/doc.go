// Package registry owns what the API does with an object between the
// front ends and etcd: the generic verbs (create.go, read.go, update.go,
// delete.go, watch.go, patch.go, apply.go) that every kind shares, and the
// strategies (strategy.go) where kinds differ — a Pod's graceful deletion,
// a Namespace emptied before it goes, a Job's selector, a Node's status
// kept on create. A create runs: decode and check the fields, set the
// fields the server owns, the admission chain (mutating, then validating,
// quota last), encode, and one etcd transaction that also charges quotas
// and claims a Service's addresses. The REST and gRPC front ends call these
// verbs directly, after the handler chain (authentication, audit,
// authorization) has let the call through.
//
// It mirrors kube-apiserver's generic registry
// (k8s.io/apiserver/pkg/registry/generic/registry.Store) and the kinds'
// strategies (pkg/registry/<group>/<kind>/strategy.go).
package registry
