// Package apiserver is kobune-apiserver (kube-apiserver, with etcd
// embedded or external): the only component that talks to etcd. Every
// write goes the way Kubernetes' does — authentication, authorization,
// decode, server-owned metadata (uid, creationTimestamp, generation), the
// admission chain (one ordered list: admissionchain.go), then storage with
// the revision the caller read (optimistic concurrency). Reads come from
// etcd; watches stream etcd's history filtered by label and field
// selectors. Two front ends share one port: the gRPC API Kobune's
// components use and Kubernetes' REST API for kubectl and client-go.
//
// Concepts and where they are: the generic verbs one file each (create,
// update, delete, patch, apply, watch, bind), per-kind behaviour
// (strategy), the REST front end (rest*), authentication and
// authorization (authn, authorization and the authorizer package),
// Services' addresses (services), quotas, encryption at rest and audit
// (their packages), etcd's space and compaction (etcdspace). The
// subpackages name the rest; docs/architecture.md maps each concept to
// its files, and docs/reading-order.md says which to read first.
package apiserver
