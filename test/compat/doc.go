// Package compat is Kobune's compatibility suite with Kubernetes' own
// clients: the real kubectl (built from k8s.io/kubectl at the version this
// module pins), client-go and a controller-runtime operator (a CRD, a
// status subresource, a finalizer, owner references, a validating
// webhook), against Kobune's REST API. It is its own Go
// module so that Kobune's module never depends on Kubernetes' libraries;
// `make test` runs it (make compat alone).
package compat
