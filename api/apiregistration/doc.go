// Package apiregistration holds APIService ("apiregistration.k8s.io/v1"):
// one group version of the API, its priority among the others, and
// whether it is available. It mirrors k8s.io/kube-aggregator's
// apiregistration/v1 types and their validation.
//
// Kobune has no aggregation layer: every APIService is local (the API
// server serves the group version itself). The API server registers one
// for each group version it serves, custom kinds' included, and keeps
// their status (apiserver/apiservices.go); an APIService that names a
// Service to proxy to is refused (docs/differences.md).
package apiregistration
