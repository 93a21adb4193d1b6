// Package proto holds the gRPC service definitions (api.proto: the resource
// API, mirroring the Kubernetes REST verbs create/get/list/update/
// updateStatus/delete/watch and the pods/binding subresource). The generated
// Go code lives in proto/apipb and is committed; `make proto` regenerates it
// with the pinned generators.
package proto
