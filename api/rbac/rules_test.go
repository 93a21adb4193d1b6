package rbac

import (
	"strings"
	"testing"

	"github.com/kobune/kobune/api/meta"
)

func om(name, ns string) meta.ObjectMeta { return meta.ObjectMeta{Name: name, Namespace: ns} }

func TestRuleAllows(t *testing.T) {
	podsRead := PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	cases := []struct {
		name string
		rule PolicyRule
		req  Request
		want bool
	}{
		{"verb and resource", podsRead, Request{Verb: "get", Resource: "pods", Name: "a"}, true},
		{"other verb", podsRead, Request{Verb: "delete", Resource: "pods", Name: "a"}, false},
		{"other group", podsRead, Request{Verb: "get", APIGroup: "apps", Resource: "pods"}, false},
		{"subresource is not the resource", podsRead, Request{Verb: "get", Resource: "pods", Subresource: "log", Name: "a"}, false},
		{"subresource named", PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/exec"}},
			Request{Verb: "create", Resource: "pods", Subresource: "exec", Name: "a"}, true},
		{"subresource rule is not the resource", PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
			Request{Verb: "get", Resource: "pods", Name: "a"}, false},
		{"*/scale", PolicyRule{Verbs: []string{"update"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			Request{Verb: "update", APIGroup: "apps", Resource: "deployments", Subresource: "scale"}, true},
		{"* covers subresources", PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			Request{Verb: "create", Resource: "pods", Subresource: "exec"}, true},
		{"resourceNames match", PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}},
			Request{Verb: "get", Resource: "secrets", Name: "db"}, true},
		{"resourceNames other name", PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}},
			Request{Verb: "get", Resource: "secrets", Name: "api"}, false},
		{"resourceNames never match a list", PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}},
			Request{Verb: "list", Resource: "secrets"}, false},
		{"non-resource exact", PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}, Request{Verb: "get", Path: "/version"}, true},
		{"non-resource prefix", PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, Request{Verb: "get", Path: "/healthz/etcd"}, true},
		{"non-resource other", PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}, Request{Verb: "get", Path: "/metrics"}, false},
		{"resource rule never matches a path", podsRead, Request{Verb: "get", Path: "/version"}, false},
	}
	for _, c := range cases {
		if got := c.rule.Allows(&c.req); got != c.want {
			t.Errorf("%s: Allows = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCovers(t *testing.T) {
	owner := []PolicyRule{
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}},
		{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}},
	}
	cases := []struct {
		rule PolicyRule
		want bool
	}{
		{PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, true},
		{PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}}, true},
		{PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}, false},
		{PolicyRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/exec"}}, false},
		{PolicyRule{Verbs: []string{"update", "delete"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}, true},
		{PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}}, false},
		{PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"pods"}}, false},
		{PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*"}}, false},
		{PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"db"}}, true},
		{PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}, false},
		{PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"api"}}, false},
		{PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}, false},
	}
	for _, c := range cases {
		if got := Covers(owner, c.rule); got != c.want {
			t.Errorf("Covers(%+v) = %v, want %v", c.rule, got, c.want)
		}
	}
	if !Covers([]PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, {Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}) {
		t.Error("cluster-admin's rules do not cover themselves")
	}
}

func TestValidationNamesTheField(t *testing.T) {
	cases := []struct {
		errs string
		want string
	}{
		{ValidateRole(&Role{ObjectMeta: om("r", "ns"), Rules: []PolicyRule{{Resources: []string{"pods"}, APIGroups: []string{""}}}}).ToError().Error(), "rules[0].verbs"},
		{ValidateRole(&Role{ObjectMeta: om("r", "ns"), Rules: []PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/version"}}}}).ToError().Error(), "namespaced rules cannot apply to non-resource URLs"},
		{ValidateClusterRole(&ClusterRole{ObjectMeta: om("r", ""), Rules: []PolicyRule{{Verbs: []string{"get"}, Resources: []string{"pods"}}}}).ToError().Error(), "rules[0].apiGroups"},
		{ValidateRoleBinding(&RoleBinding{ObjectMeta: om("b", "ns"), RoleRef: RoleRef{GroupName, "Secret", "x"}}).ToError().Error(), "roleRef.kind"},
		{ValidateClusterRoleBinding(&ClusterRoleBinding{ObjectMeta: om("b", ""), RoleRef: RoleRef{GroupName, "ClusterRole", "view"},
			Subjects: []Subject{{Kind: ServiceAccountKind, Name: "default"}}}).ToError().Error(), "subjects[0].namespace"},
		{ValidateRoleBinding(&RoleBinding{ObjectMeta: om("b", "ns"), RoleRef: RoleRef{GroupName, "Role", "x"},
			Subjects: []Subject{{Kind: "Robot", Name: "r2"}}}).ToError().Error(), "subjects[0].kind"},
	}
	for _, c := range cases {
		if !strings.Contains(c.errs, c.want) {
			t.Errorf("error %q does not name %q", c.errs, c.want)
		}
	}
	if err := ValidateRoleRefUpdate(RoleRef{GroupName, "ClusterRole", "admin"}, RoleRef{GroupName, "ClusterRole", "view"}); err == nil {
		t.Error("a changed roleRef is accepted")
	}
}

// TestBindingDefaults: a binding that leaves out roleRef.apiGroup (the
// conformance suite's do) gets the RBAC group, as Kubernetes' rbac/v1
// defaults give it, and is valid; another group is still refused.
func TestBindingDefaults(t *testing.T) {
	rb := &RoleBinding{ObjectMeta: om("b", "ns"), RoleRef: RoleRef{Kind: "Role", Name: "r"}, Subjects: []Subject{{Kind: UserKind, Name: "u"}}}
	SetDefaultsRoleBinding(rb)
	if rb.RoleRef.APIGroup != GroupName || rb.Subjects[0].APIGroup != GroupName {
		t.Errorf("defaults: roleRef %+v, subject %+v", rb.RoleRef, rb.Subjects[0])
	}
	if errs := ValidateRoleBinding(rb); len(errs) > 0 {
		t.Errorf("a defaulted binding is invalid: %v", errs)
	}
	crb := &ClusterRoleBinding{ObjectMeta: om("c", ""), RoleRef: RoleRef{Kind: "ClusterRole", Name: "view"}}
	SetDefaultsClusterRoleBinding(crb)
	if crb.RoleRef.APIGroup != GroupName {
		t.Errorf("ClusterRoleBinding roleRef after defaults: %+v", crb.RoleRef)
	}
	other := &RoleBinding{ObjectMeta: om("b", "ns"), RoleRef: RoleRef{APIGroup: "example.com", Kind: "Role", Name: "r"}}
	SetDefaultsRoleBinding(other)
	if err := ValidateRoleBinding(other).ToError(); err == nil || !strings.Contains(err.Error(), "roleRef.apiGroup") {
		t.Errorf("a roleRef of another group: %v", err)
	}
}
