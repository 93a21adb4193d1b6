// Package meta holds what every Kobune object shares: TypeMeta (apiVersion and
// kind), ObjectMeta (name, namespace, uid, labels, resourceVersion, ...), list
// metadata, owner references, timestamps, label selectors and int-or-string.
//
// It mirrors Kubernetes' k8s.io/apimachinery/pkg/apis/meta/v1 with the same
// field names and JSON shapes, so a manifest written for Kubernetes decodes
// into the same structure here.
package meta
