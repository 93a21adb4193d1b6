// Package apiserver is kobune-apiserver: the gRPC resource API in front of
// etcd (kube-apiserver). Every request goes the same way as in Kubernetes:
// decode, fill server-owned metadata (uid, creationTimestamp, generation),
// run the admission chain (mutating steps, then validating steps), and write
// to storage with the revision the caller read. Reads are served from etcd;
// watches stream etcd's history filtered by label and field selectors.
//
// Files by role: server.go (wiring, gRPC, HTTP health and metrics),
// etcd.go (embedded or external etcd), objects.go (JSON <-> stored bytes),
// create.go, update.go, delete.go, read.go (get/list), watch.go, bind.go,
// namespaces.go (namespace cache and cleanup), metrics.go, errors.go.
package apiserver
