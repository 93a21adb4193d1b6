package authorizer

import (
	"fmt"
	"strings"

	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/apiserver/request"
)

// Decision is an authorizer's answer.
type Decision int

// Decisions.
const (
	// NoOpinion lets the next authorizer decide; if none allows, the
	// request is denied.
	NoOpinion Decision = iota
	Allow
	Deny
)

// Authorizer decides one request; reason says why (which binding allowed
// it, or why it is denied).
type Authorizer interface {
	Authorize(u request.UserInfo, a *request.Attributes) (d Decision, reason string)
}

// AlwaysAllow allows everything (--authorization-mode=AlwaysAllow, the
// insecure mode of a server without client authentication).
type AlwaysAllow struct{}

// Authorize implements Authorizer.
func (AlwaysAllow) Authorize(request.UserInfo, *request.Attributes) (Decision, string) {
	return Allow, "AlwaysAllow"
}

// Privileged allows members of system:masters everything, before any
// other mode, as kube-apiserver's privileged-group authorizer does.
type Privileged struct{}

// Authorize implements Authorizer.
func (Privileged) Authorize(u request.UserInfo, _ *request.Attributes) (Decision, string) {
	if u.InGroup(request.SystemPrivilegedGroup) {
		return Allow, "member of " + request.SystemPrivilegedGroup
	}
	return NoOpinion, ""
}

// Union asks each authorizer in turn; the first Allow or Deny decides.
type Union []Authorizer

// Authorize implements Authorizer.
func (un Union) Authorize(u request.UserInfo, a *request.Attributes) (Decision, string) {
	var reasons []string
	for _, z := range un {
		d, why := z.Authorize(u, a)
		if d != NoOpinion {
			return d, why
		}
		if why != "" {
			reasons = append(reasons, why)
		}
	}
	return NoOpinion, strings.Join(reasons, "; ")
}

// Modes are the authorization modes Kobune has, in the order they may be
// given.
var Modes = []string{"AlwaysAllow", "Node", "RBAC"}

// ParseModes checks --authorization-mode (a comma-separated list).
func ParseModes(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		ok := false
		for _, known := range Modes {
			ok = ok || m == known
		}
		if !ok {
			return nil, fmt.Errorf("--authorization-mode: unknown mode %q (modes: %s)", m, strings.Join(Modes, ", "))
		}
		if seen[m] {
			return nil, fmt.Errorf("--authorization-mode: %q given twice", m)
		}
		seen[m] = true
		out = append(out, m)
	}
	if seen["AlwaysAllow"] && len(out) > 1 {
		return nil, fmt.Errorf("--authorization-mode: AlwaysAllow allows everything; it makes no sense beside %s", strings.Join(out, ","))
	}
	return out, nil
}

// Describe is a request in words, for denial messages: `list
// resource "secrets" in API group "" in the namespace "shop"`, as
// Kubernetes' Forbidden messages word it.
func Describe(u request.UserInfo, a *request.Attributes) string {
	if a.Path != "" {
		return fmt.Sprintf("User %q cannot %s path %q", u.Name, a.Verb, a.Path)
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q", u.Name, a.Verb, res, a.APIGroup)
	if a.Namespace != "" {
		msg += fmt.Sprintf(" in the namespace %q", a.Namespace)
	} else {
		msg += " at the cluster scope"
	}
	return msg
}

// RuleResolver lists the rules that apply to a user in a namespace
// (Kubernetes' authorizer.RuleResolver): what a SelfSubjectRulesReview,
// and so `kubectl auth can-i --list`, shows. incomplete says some mode
// decides requests it cannot list as rules (the Node authorizer).
type RuleResolver interface {
	ListRules(u request.UserInfo, namespace string) (rules []rbac.PolicyRule, incomplete bool)
}

// everything is the rule of a user allowed everything.
var everything = []rbac.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// RulesFor implements RuleResolver.
func (AlwaysAllow) ListRules(request.UserInfo, string) ([]rbac.PolicyRule, bool) {
	return everything, false
}

// RulesFor implements RuleResolver.
func (Privileged) ListRules(u request.UserInfo, _ string) ([]rbac.PolicyRule, bool) {
	if u.InGroup(request.SystemPrivilegedGroup) {
		return everything, false
	}
	return nil, false
}

// RulesFor implements RuleResolver: every mode's rules together.
func (un Union) ListRules(u request.UserInfo, namespace string) ([]rbac.PolicyRule, bool) {
	var all []rbac.PolicyRule
	incomplete := false
	for _, z := range un {
		r, ok := z.(RuleResolver)
		if !ok {
			incomplete = true
			continue
		}
		rules, inc := r.ListRules(u, namespace)
		all, incomplete = append(all, rules...), incomplete || inc
	}
	return all, incomplete
}
