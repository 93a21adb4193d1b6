package rbac

import (
	"github.com/kobune/kobune/api/meta"
)

// GroupName is the RBAC API group.
const GroupName = "rbac.authorization.k8s.io"

// Subject kinds.
const (
	UserKind           = "User"
	GroupKind          = "Group"
	ServiceAccountKind = "ServiceAccount"
)

// AutoUpdateAnnotation on a bootstrap role or binding says the API server
// may put it back as it ships it at every start (set it to "false" to keep
// your own changes), as in Kubernetes.
const AutoUpdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"

// PolicyRule allows verbs on resources (of API groups, optionally only the
// named objects) or on non-resource URLs. "*" matches every value.
type PolicyRule struct {
	Verbs []string `json:"verbs"`
	// APIGroups: "" is the core group.
	APIGroups []string `json:"apiGroups,omitempty"`
	// Resources are resource names, or "resource/subresource" such as
	// "pods/exec" ("*/scale" for every scale subresource).
	Resources []string `json:"resources,omitempty"`
	// ResourceNames restricts the rule to these objects; requests that
	// name no object (list, create) never match such a rule.
	ResourceNames []string `json:"resourceNames,omitempty"`
	// NonResourceURLs are paths such as "/version" ("/healthz/*" matches
	// below it); only ClusterRoles may have them.
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// Role is a namespaced set of rules.
type Role struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Rules           []PolicyRule `json:"rules"`
}

// ClusterRole is a set of rules for the whole cluster (or, bound by a
// RoleBinding, for one namespace).
type ClusterRole struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Rules           []PolicyRule `json:"rules"`
	// AggregationRule makes the rules the union of the rules of every
	// ClusterRole its selectors match (kept by kobune-controller's
	// clusterrole-aggregation controller).
	AggregationRule *AggregationRule `json:"aggregationRule,omitempty"`
}

// AggregationRule selects the ClusterRoles whose rules are aggregated.
type AggregationRule struct {
	ClusterRoleSelectors []meta.LabelSelector `json:"clusterRoleSelectors,omitempty"`
}

// Subject is who a binding grants its role to.
type Subject struct {
	Kind string `json:"kind"`
	// APIGroup is "" for ServiceAccounts and rbac.authorization.k8s.io
	// for users and groups (defaulted).
	APIGroup string `json:"apiGroup,omitempty"`
	Name     string `json:"name"`
	// Namespace is the ServiceAccount's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// RoleRef names the role a binding grants; it cannot change.
type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// RoleBinding grants a Role, or a ClusterRole's rules, in its namespace.
type RoleBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Subjects        []Subject `json:"subjects,omitempty"`
	RoleRef         RoleRef   `json:"roleRef"`
}

// ClusterRoleBinding grants a ClusterRole in every namespace and for
// cluster-scoped resources and non-resource URLs.
type ClusterRoleBinding struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	Subjects        []Subject `json:"subjects,omitempty"`
	RoleRef         RoleRef   `json:"roleRef"`
}
