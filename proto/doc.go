// Package proto holds the gRPC service definitions. api.proto is the
// resource API, mirroring the Kubernetes REST verbs (create, get, list,
// update, updateStatus, delete, watch), the pods/binding, pods/log and
// pods/exec subresources; node.proto is the node API the API server uses
// to reach an agent for logs and exec (the kubelet's API). The generated Go
// code lives in proto/apipb and proto/nodepb and is committed; `make proto`
// regenerates it with the pinned generators.
package proto
