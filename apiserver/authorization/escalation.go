package authorization

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/apiserver/admission"
	"github.com/kobune/kobune/apiserver/authorizer"
	"github.com/kobune/kobune/apiserver/request"
)

// escalation is Kubernetes' RBAC escalation prevention: a user may
// only write a Role or ClusterRole whose every rule they hold themselves
// (or with the escalate verb on it), and only bind a role whose rules they
// hold in the binding's namespace (or with the bind verb on it). So a
// namespace admin can hand out view or edit in their namespace, but
// cannot grant themselves, or anyone, more than they have.
type escalation struct {
	rbac  *authorizer.RBAC
	authz authorizer.Authorizer
}

func (escalation) Name() string { return "RBACEscalation" }

func (e escalation) Validate(ctx context.Context, a *admission.Attributes) error {
	u := request.UserFrom(ctx)
	m := a.Object.GetObjectMeta()
	var rules []rbac.PolicyRule
	var verbResource string
	var ref *rbac.RoleRef
	switch o := a.Object.(type) {
	case *rbac.Role:
		rules, verbResource = o.Rules, "roles"
	case *rbac.ClusterRole:
		rules, verbResource = o.Rules, "clusterroles"
		if o.AggregationRule != nil && !e.allowed(u, "escalate", "clusterroles", "", m.Name) {
			return status.Errorf(codes.PermissionDenied, "clusterroles.rbac.authorization.k8s.io %q is forbidden: user %q (groups=%q) is attempting to write an aggregated ClusterRole: that needs the escalate verb on clusterroles (cluster-admin has it)", m.Name, u.Name, u.Groups)
		}
	case *rbac.RoleBinding:
		ref = &o.RoleRef
	case *rbac.ClusterRoleBinding:
		ref = &o.RoleRef
	default:
		return nil
	}
	if ref == nil {
		if e.allowed(u, "escalate", verbResource, m.Namespace, m.Name) {
			return nil
		}
		return e.check(u, m.Namespace, rules, fmt.Sprintf("%s.rbac.authorization.k8s.io %q", verbResource, m.Name), "create or update this role", "escalate")
	}
	res := "clusterroles"
	if ref.Kind == "Role" {
		res = "roles"
	}
	roleNS := m.Namespace
	if res == "clusterroles" {
		roleNS = ""
	}
	if e.allowed(u, "bind", res, roleNS, ref.Name) {
		return nil
	}
	if ref.Kind == "Role" {
		role := e.rbac.Role(m.Namespace, ref.Name)
		if role == nil {
			return status.Errorf(codes.PermissionDenied, "rolebindings.rbac.authorization.k8s.io %q is forbidden: Role %q not found in %s; create the role first (or have the bind verb on it)", m.Name, ref.Name, m.Namespace)
		}
		rules = role.Rules
	} else {
		role := e.rbac.ClusterRole(ref.Name)
		if role == nil {
			return status.Errorf(codes.PermissionDenied, "%q is forbidden: ClusterRole %q not found; create the role first (or have the bind verb on it)", m.Name, ref.Name)
		}
		rules = role.Rules
	}
	what := fmt.Sprintf("rolebindings.rbac.authorization.k8s.io %q", m.Name)
	if m.Namespace == "" {
		what = fmt.Sprintf("clusterrolebindings.rbac.authorization.k8s.io %q", m.Name)
	}
	return e.check(u, m.Namespace, rules, what, fmt.Sprintf("bind %s %q", ref.Kind, ref.Name), "bind")
}

func (e escalation) allowed(u request.UserInfo, verb, resource, ns, name string) bool {
	d, _ := e.authz.Authorize(u, &request.Attributes{Verb: verb, APIGroup: rbac.GroupName, APIVersion: "v1", Resource: resource, Namespace: ns, Name: name})
	return d == authorizer.Allow
}

// check refuses rules the user does not hold in ns, naming the first few.
func (e escalation) check(u request.UserInfo, ns string, rules []rbac.PolicyRule, what, doing, verb string) error {
	if u.InGroup(request.SystemPrivilegedGroup) {
		return nil
	}
	owned := e.rbac.RulesFor(u, ns)
	var missing []string
	for _, r := range rules {
		if !rbac.Covers(owned, r) {
			missing = append(missing, fmt.Sprintf("{APIGroups:%q, Resources:%q, ResourceNames:%q, NonResourceURLs:%q, Verbs:%q}", r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs, r.Verbs))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if len(missing) > 5 {
		missing = append(missing[:5], fmt.Sprintf("and %d more", len(missing)-5))
	}
	return status.Errorf(codes.PermissionDenied, "%s is forbidden: user %q (groups=%q) is attempting to grant RBAC permissions not currently held (to %s): %s; ask for the %s verb, or for these permissions",
		what, u.Name, u.Groups, doing, strings.Join(missing, ", "), verb)
}

// Escalation is the RBAC escalation check as an admission step, nil
// without RBAC.
func (s *Authorization) Escalation() admission.Validator {
	if s.rbac == nil {
		return nil
	}
	return escalation{rbac: s.rbac, authz: s.authz}
}
