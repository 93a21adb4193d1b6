// Package apiserver is kobune-apiserver (kube-apiserver, with etcd
// embedded or external): the only component that talks to etcd. Every
// write goes the way Kubernetes' does — authentication, authorization,
// decode, server-owned metadata (uid, creationTimestamp, generation), the
// admission chain, then storage with the revision the caller read
// (optimistic concurrency). Reads come from etcd; watches stream etcd's
// history filtered by label and field selectors. Two front ends share one
// port: the gRPC API Kobune's components use and Kubernetes' REST API for
// kubectl and client-go.
//
// This package is the wiring, as kube-apiserver's pkg/controlplane: New
// puts the server together in named steps (start.go), the handler chain
// (handlerchain.go) and the admission chain (admissionchain.go) are each
// one ordered list, and Serve runs the loops (compaction, Service repair,
// the caches). The concepts live in the subpackages, on floors that
// test/layering holds: the front ends (rest, grpcapi), the chain's
// filters, authentication, authorization, the node proxy, the registry
// with its strategies and admission, Service allocation, storage and
// etcd. docs/architecture.md draws them, and docs/reading-order.md says
// which files to read first.
package apiserver
