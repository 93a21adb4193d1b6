// Package admission holds the plugins every write passes before it is
// stored — the mutating ones (which may change the object) and the
// validating ones (which may only refuse it) — and the Chain that runs
// them. It mirrors Kubernetes' admission controllers
// (k8s.io/apiserver/pkg/admission). Their order is one list with a reason
// on each line, kube-apiserver's AllOrderedPlugins: the API server's
// admissionChain (apiserver/admissionchain.go), shown in
// docs/architecture.md.
package admission
