// Package testserver starts a real kobune-apiserver with embedded etcd inside
// a test process, so integration tests and benchmarks exercise the real
// storage, admission and gRPC paths — the way Kubernetes' integration tests
// run a real kube-apiserver on a real etcd (k8s.io/kubernetes/test/integration).
package testserver
