// Package authorization owns whether a caller may do what it asks: the
// authorizers --authorization-mode names (Node, RBAC, AlwaysAllow; the
// rules themselves are apiserver/authorizer's), kept current from storage
// by watches of the roles, bindings, pods and claims; what a call asks
// (AttributesOf: verb, resource, namespace, name); the access and rules
// reviews (kubectl auth can-i); RBAC's escalation check as an admission
// step; and the bootstrap roles and bindings written at every start.
//
// It mirrors kube-apiserver's authorization configuration
// (pkg/kubeapiserver/authorizer), its RBAC bootstrap policy
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy, with the
// reconciliation of pkg/registry/rbac/rest), the review storages
// (pkg/registry/authorization) and the escalation check
// (pkg/registry/rbac/escalation_check.go).
package authorization

import (
	"github.com/kobune/kobune/apiserver/authorizer"
	"github.com/kobune/kobune/apiserver/storage"
)

// Config is what the authorizers are built from.
type Config struct {
	// Mode is --authorization-mode ("": Node,RBAC with client
	// certificates, AlwaysAllow without: nobody could be told apart).
	Mode string
	// ClientCertificates: callers are authenticated (--client-ca-file).
	ClientCertificates bool
	// Store feeds the caches and answers the node authorizer's misses.
	Store *storage.Store
	Logf  func(format string, args ...any)
}

// Authorization decides calls.
type Authorization struct {
	store *storage.Store
	logf  func(format string, args ...any)
	// authz decides every call; rbac and node are its RBAC and Node
	// modes when enabled, synced closes when their caches are filled.
	authz  authorizer.Authorizer
	rbac   *authorizer.RBAC
	node   *authorizer.Node
	synced chan struct{}
}
