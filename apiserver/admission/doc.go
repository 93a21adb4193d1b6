// Package admission is the ordered chain every write passes before it is
// stored: first the mutating steps (which may change the object), then the
// validating steps (which may only refuse it). It mirrors Kubernetes'
// admission controllers (k8s.io/apiserver/pkg/admission), with the chain
// built in one constructor, NewChain, that says why each step is where it is.
package admission
