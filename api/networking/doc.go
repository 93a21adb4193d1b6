// Package networking holds the "networking.k8s.io/v1" kinds: NetworkPolicy
// (which pods may talk to which, enforced by each node's agent), Ingress
// and IngressClass (HTTP routes from outside to Services, served by an
// ingress controller), with Kubernetes' defaulting and validation, shaped
// like k8s.io/api/networking/v1.
package networking
