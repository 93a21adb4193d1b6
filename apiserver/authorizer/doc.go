// Package authorizer decides whether a user may do what a request asks:
// Kubernetes' authorization modes. RBAC answers from Roles, ClusterRoles
// and their bindings, kept in memory and indexed by subject; Node is
// Kubernetes' node authorizer, which lets an agent (user
// system:node:<name>) read only the Secrets, ConfigMaps, claims and volumes
// of pods bound to its node, following a graph of pods kept current by a
// watch; Union asks each mode in turn (--authorization-mode=Node,RBAC), the
// first that allows or denies decides, and nothing allowed is denied.
// Bootstrap holds the roles and bindings the API server creates at start
// (cluster-admin, admin, edit, view, the components' least-privilege
// roles), as kube-apiserver's bootstrap policy does.
package authorizer
