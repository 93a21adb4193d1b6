package flowcontrol

import (
	"slices"
	"strings"

	fc "github.com/kobune/kobune/api/flowcontrol"
	"github.com/kobune/kobune/apiserver/request"
)

// matches reports whether one of the schema's rules matches the request:
// a subject for the user and a rule for what it asks.
func matches(fs *fc.FlowSchema, u request.UserInfo, a *request.Attributes) bool {
	for i := range fs.Spec.Rules {
		r := &fs.Spec.Rules[i]
		if !slices.ContainsFunc(r.Subjects, func(s fc.Subject) bool { return subjectMatches(&s, u) }) {
			continue
		}
		if a.ResourceRequest() {
			if slices.ContainsFunc(r.ResourceRules, func(rr fc.ResourcePolicyRule) bool { return resourceMatches(&rr, a) }) {
				return true
			}
		} else if slices.ContainsFunc(r.NonResourceRules, func(nr fc.NonResourcePolicyRule) bool { return nonResourceMatches(&nr, a) }) {
			return true
		}
	}
	return false
}

func subjectMatches(s *fc.Subject, u request.UserInfo) bool {
	switch {
	case s.Kind == fc.SubjectUser && s.User != nil:
		return s.User.Name == "*" || s.User.Name == u.Name
	case s.Kind == fc.SubjectGroup && s.Group != nil:
		return s.Group.Name == "*" || u.InGroup(s.Group.Name)
	case s.Kind == fc.SubjectServiceAccount && s.ServiceAccount != nil:
		prefix := request.ServiceAccountUserPrefix + s.ServiceAccount.Namespace + ":"
		if s.ServiceAccount.Name == "*" {
			return strings.HasPrefix(u.Name, prefix)
		}
		return u.Name == prefix+s.ServiceAccount.Name
	}
	return false
}

func starOr(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

func resourceMatches(r *fc.ResourcePolicyRule, a *request.Attributes) bool {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if !starOr(r.Verbs, a.Verb) || !starOr(r.APIGroups, a.APIGroup) || !starOr(r.Resources, resource) {
		return false
	}
	if a.Namespace == "" {
		return r.ClusterScope
	}
	return starOr(r.Namespaces, a.Namespace)
}

func nonResourceMatches(r *fc.NonResourcePolicyRule, a *request.Attributes) bool {
	if !starOr(r.Verbs, a.Verb) {
		return false
	}
	for _, u := range r.NonResourceURLs {
		if u == "*" || u == a.Path || strings.HasSuffix(u, "*") && strings.HasPrefix(a.Path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}

// flowOf is the flow a request belongs to: the schema and what its
// distinguisher method picks out (the user, or the namespace).
func flowOf(fs *fc.FlowSchema, u request.UserInfo, a *request.Attributes) string {
	d := ""
	if m := fs.Spec.DistinguisherMethod; m != nil {
		switch m.Type {
		case fc.ByUser:
			d = u.Name
		case fc.ByNamespace:
			d = a.Namespace
		}
	}
	return fs.Name + "\x00" + d
}
