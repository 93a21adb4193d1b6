// Package rbac holds role-based access control ("rbac.authorization.k8s.io/v1"):
// Roles and ClusterRoles (sets of rules: verbs on resources, or on
// non-resource URLs), RoleBindings and ClusterRoleBindings (which grant a
// role to users, groups and ServiceAccounts), and the matching of a rule
// against a request, which the API server's RBAC authorizer and its
// escalation check share.
package rbac
