// Package webhook calls out from the API server to the webhooks its users
// configure: admission webhooks (apiserver/dynamicadmission) and
// CustomResourceDefinitions' conversion webhooks (apiserver/apiextensions)
// are both an HTTPS POST of a JSON review to a URL or to the pod behind a
// Service, checked against the CA bundle the configuration carries, with
// a deadline and a bound on what the answer may make the server hold.
// Caller keeps one HTTP client per CA bundle and server name, so that
// calls reuse their TLS connections.
//
// It mirrors k8s.io/apiserver/pkg/util/webhook (the client manager, the
// service resolver and the client configuration).
package webhook
