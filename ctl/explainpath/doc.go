// Package explainpath is Kobune's explain-path: the way a packet to a
// Service, through an Ingress, or between two pods takes, and the
// NetworkPolicy verdict on it, read from the API objects with the same
// code the node agent programs its rules from. Kubernetes has no such
// command; it is what a course asks when a connection fails.
package explainpath
