// Package storage keeps API objects in etcd, one key per object
// (/kobune/<resource>/<namespace>/<name>), and is the only code in Kobune
// that reads or writes them there (apiserver/etcd starts or connects to
// etcd and watches its space; nothing outside the API server reaches it).
//
// It mirrors Kubernetes' k8s.io/apiserver/pkg/storage/etcd3: an object's
// resourceVersion is its etcd modification revision; create is a transaction
// on "key does not exist"; update and delete compare the revision the caller
// read and fail with ErrConflict when it moved (optimistic concurrency);
// List returns the store revision that Watch resumes from; a watch from a
// compacted revision fails with ErrExpired (Kubernetes' 410 Gone).
package storage
