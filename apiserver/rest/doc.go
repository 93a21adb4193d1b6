// Package rest is the Kubernetes REST API, one of the API server's two
// front ends (the other is apiserver/grpcapi), served beside the gRPC API
// on the same port (apiserver/connmux.go). A REST request is read into
// the request message it means and passes the handler chain (metrics,
// authentication, audit, authorization: apiserver/handlerchain.go) to the
// registry's verb it names — registry.Get, Create, Watch ..., the same
// functions the gRPC front end calls, with their decoding, admission,
// validation and storage — so no rule exists twice: what differs is only
// the shape on the wire (URLs, query parameters, metav1.Status errors,
// lists, watch events as JSON lines, Tables, WebSocket and SPDY streams
// for exec, attach and port-forward).
//
// It mirrors kube-apiserver's HTTP handlers
// (k8s.io/apiserver/pkg/endpoints/handlers) and discovery
// (k8s.io/apiserver/pkg/endpoints/discovery); it imports the registry,
// never the gRPC front end.
package rest
