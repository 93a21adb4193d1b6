// Package discovery holds EndpointSlice ("discovery.k8s.io/v1"): the
// addresses behind a Service, at most 100 per slice, each with its
// conditions (ready, serving, terminating) and topology (node, zone), as
// the EndpointSlice controller of kobune-controller writes them and the
// node proxy reads them.
package discovery
