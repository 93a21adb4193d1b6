package authorizer

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/apiserver/request"
)

// RBAC is the RBAC authorizer. The API server feeds it every Role,
// ClusterRole and binding (Set*, Delete*) from a watch; each change builds
// a new index by subject, which requests read without locks, so a decision
// costs the bindings of the user and its groups, not the number of roles.
type RBAC struct {
	mu              sync.Mutex            // serializes writers
	roles           map[string]*rbac.Role // namespace/name
	clusterRoles    map[string]*rbac.ClusterRole
	bindings        map[string]*rbac.RoleBinding // namespace/name
	clusterBindings map[string]*rbac.ClusterRoleBinding
	index           atomic.Pointer[rbacIndex]
}

type rbacIndex struct {
	roles        map[string]*rbac.Role
	clusterRoles map[string]*rbac.ClusterRole
	// cluster: subject key → its ClusterRoleBindings; namespaced: namespace
	// → subject key → its RoleBindings.
	cluster    map[string][]*rbac.ClusterRoleBinding
	namespaced map[string]map[string][]*rbac.RoleBinding
}

// NewRBAC is an RBAC authorizer with no roles (everything denied).
func NewRBAC() *RBAC {
	r := &RBAC{roles: map[string]*rbac.Role{}, clusterRoles: map[string]*rbac.ClusterRole{},
		bindings: map[string]*rbac.RoleBinding{}, clusterBindings: map[string]*rbac.ClusterRoleBinding{}}
	r.rebuild()
	return r
}

// subject keys: users (ServiceAccounts are users named
// system:serviceaccount:<ns>:<name>) and groups.
func userKey(name string) string  { return "u:" + name }
func groupKey(name string) string { return "g:" + name }

func subjectKey(s rbac.Subject, bindingNamespace string) string {
	switch s.Kind {
	case rbac.UserKind:
		return userKey(s.Name)
	case rbac.GroupKind:
		return groupKey(s.Name)
	case rbac.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace // a RoleBinding's own namespace, as Kubernetes defaults it
		}
		return userKey(request.ServiceAccountUserPrefix + ns + ":" + s.Name)
	}
	return ""
}

func (r *RBAC) rebuild() {
	ix := &rbacIndex{roles: make(map[string]*rbac.Role, len(r.roles)), clusterRoles: make(map[string]*rbac.ClusterRole, len(r.clusterRoles)),
		cluster: map[string][]*rbac.ClusterRoleBinding{}, namespaced: map[string]map[string][]*rbac.RoleBinding{}}
	for k, v := range r.roles {
		ix.roles[k] = v
	}
	for k, v := range r.clusterRoles {
		ix.clusterRoles[k] = v
	}
	for _, b := range r.clusterBindings {
		for _, s := range b.Subjects {
			if k := subjectKey(s, ""); k != "" {
				ix.cluster[k] = append(ix.cluster[k], b)
			}
		}
	}
	for _, b := range r.bindings {
		m := ix.namespaced[b.Namespace]
		if m == nil {
			m = map[string][]*rbac.RoleBinding{}
			ix.namespaced[b.Namespace] = m
		}
		for _, s := range b.Subjects {
			if k := subjectKey(s, b.Namespace); k != "" {
				m[k] = append(m[k], b)
			}
		}
	}
	r.index.Store(ix)
}

// Replace replaces every object of one resource ("roles",
// "clusterroles", "rolebindings", "clusterrolebindings") with objs (after a
// list).
func (r *RBAC) Replace(resource string, objs []any) {
	r.mu.Lock()
	switch resource {
	case "roles":
		r.roles = map[string]*rbac.Role{}
	case "clusterroles":
		r.clusterRoles = map[string]*rbac.ClusterRole{}
	case "rolebindings":
		r.bindings = map[string]*rbac.RoleBinding{}
	case "clusterrolebindings":
		r.clusterBindings = map[string]*rbac.ClusterRoleBinding{}
	}
	for _, o := range objs {
		r.setLocked(o)
	}
	r.rebuild()
	r.mu.Unlock()
}

// Set adds or replaces one object (a *rbac.Role, *rbac.ClusterRole,
// *rbac.RoleBinding or *rbac.ClusterRoleBinding).
func (r *RBAC) Set(o any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.setLocked(o) {
		r.rebuild()
	}
}

func (r *RBAC) setLocked(o any) bool {
	switch x := o.(type) {
	case *rbac.Role:
		r.roles[x.Namespace+"/"+x.Name] = x
	case *rbac.ClusterRole:
		r.clusterRoles[x.Name] = x
	case *rbac.RoleBinding:
		r.bindings[x.Namespace+"/"+x.Name] = x
	case *rbac.ClusterRoleBinding:
		r.clusterBindings[x.Name] = x
	default:
		return false
	}
	return true
}

// Delete removes one object by resource ("roles", "clusterroles",
// "rolebindings", "clusterrolebindings"), namespace and name.
func (r *RBAC) Delete(resource, namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch resource {
	case "roles":
		delete(r.roles, namespace+"/"+name)
	case "clusterroles":
		delete(r.clusterRoles, name)
	case "rolebindings":
		delete(r.bindings, namespace+"/"+name)
	case "clusterrolebindings":
		delete(r.clusterBindings, name)
	}
	r.rebuild()
}

func (ix *rbacIndex) keys(u request.UserInfo) []string {
	keys := make([]string, 0, 1+len(u.Groups))
	keys = append(keys, userKey(u.Name))
	for _, g := range u.Groups {
		keys = append(keys, groupKey(g))
	}
	return keys
}

func (ix *rbacIndex) bindingRules(ns string, ref rbac.RoleRef) []rbac.PolicyRule {
	if ref.Kind == "Role" {
		if role := ix.roles[ns+"/"+ref.Name]; role != nil {
			return role.Rules
		}
		return nil
	}
	if role := ix.clusterRoles[ref.Name]; role != nil {
		return role.Rules
	}
	return nil
}

// Authorize implements Authorizer: the ClusterRoleBindings of the user and
// its groups, then, for a namespaced request, their RoleBindings in the
// request's namespace. RBAC never denies; it allows or has no opinion.
func (r *RBAC) Authorize(u request.UserInfo, a *request.Attributes) (Decision, string) {
	ix := r.index.Load()
	q := &rbac.Request{Verb: a.Verb, APIGroup: a.APIGroup, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name, Path: a.Path}
	keys := ix.keys(u)
	for _, k := range keys {
		for _, b := range ix.cluster[k] {
			for i, rules := 0, ix.bindingRules("", b.RoleRef); i < len(rules); i++ {
				if rules[i].Allows(q) {
					return Allow, fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to %s", b.Name, b.RoleRef.Name, k[2:])
				}
			}
		}
	}
	if a.Namespace != "" && a.Path == "" {
		byKey := ix.namespaced[a.Namespace]
		for _, k := range keys {
			for _, b := range byKey[k] {
				for i, rules := 0, ix.bindingRules(b.Namespace, b.RoleRef); i < len(rules); i++ {
					if rules[i].Allows(q) {
						return Allow, fmt.Sprintf("RBAC: allowed by RoleBinding %q of %s %q to %s in %q", b.Name, b.RoleRef.Kind, b.RoleRef.Name, k[2:], b.Namespace)
					}
				}
			}
		}
	}
	return NoOpinion, ""
}

// RulesFor is every rule the user holds in namespace (cluster-wide ones
// included; namespace "" gives only those): what the escalation check
// compares a new role or binding with, and what `auth can-i --list` shows.
func (r *RBAC) RulesFor(u request.UserInfo, namespace string) []rbac.PolicyRule {
	ix := r.index.Load()
	var out []rbac.PolicyRule
	keys := ix.keys(u)
	for _, k := range keys {
		for _, b := range ix.cluster[k] {
			out = append(out, ix.bindingRules("", b.RoleRef)...)
		}
	}
	if namespace != "" {
		for _, k := range keys {
			for _, b := range ix.namespaced[namespace][k] {
				out = append(out, ix.bindingRules(b.Namespace, b.RoleRef)...)
			}
		}
	}
	return out
}

// ClusterRole is the stored ClusterRole of that name (nil if none).
func (r *RBAC) ClusterRole(name string) *rbac.ClusterRole { return r.index.Load().clusterRoles[name] }

// Role is the stored Role (nil if none).
func (r *RBAC) Role(namespace, name string) *rbac.Role {
	return r.index.Load().roles[namespace+"/"+name]
}

// ListRules implements RuleResolver.
func (r *RBAC) ListRules(u request.UserInfo, namespace string) ([]rbac.PolicyRule, bool) {
	return r.RulesFor(u, namespace), false
}
