// Package node holds RuntimeClass ("node.k8s.io/v1"): a named container
// runtime configuration (its handler, as the node's container runtime
// knows it), with the resources a pod of it costs beyond its containers
// (overhead) and the nodes that can run it (scheduling). It mirrors
// k8s.io/api/node/v1 and the RuntimeClass validation of
// k8s.io/kubernetes/pkg/apis/node/validation.
//
// Kobune serves and validates RuntimeClasses; pods cannot name one yet
// (spec.runtimeClassName is named unsupported), so a RuntimeClass changes
// no pod (docs/differences.md).
package node
