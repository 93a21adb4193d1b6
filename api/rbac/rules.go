package rbac

import "strings"

// Request is what a rule is matched against: a resource request (verb on
// a resource of a group, maybe a subresource, a namespace and a name) or a
// non-resource request (verb on a path).
type Request struct {
	Verb        string
	APIGroup    string
	Resource    string
	Subresource string
	Name        string
	// Path is set, and the resource fields are not, for a non-resource
	// request such as "get /version".
	Path string
}

// Allows reports whether the rule allows the request, with Kubernetes'
// matching: "*" matches any verb, group or resource (subresources too);
// "*/scale" matches the scale subresource of any resource; a rule with
// resourceNames matches only requests naming one of them; a non-resource
// URL ending in "*" matches every path it prefixes.
func (r *PolicyRule) Allows(q *Request) bool {
	if !contains(r.Verbs, q.Verb) {
		return false
	}
	if q.Path != "" {
		for _, u := range r.NonResourceURLs {
			if u == "*" || u == q.Path || (strings.HasSuffix(u, "*") && strings.HasPrefix(q.Path, strings.TrimSuffix(u, "*"))) {
				return true
			}
		}
		return false
	}
	if !contains(r.APIGroups, q.APIGroup) || !r.resourceMatches(q.Resource, q.Subresource) {
		return false
	}
	if len(r.ResourceNames) == 0 {
		return true
	}
	for _, n := range r.ResourceNames {
		if n == q.Name && q.Name != "" {
			return true
		}
	}
	return false
}

func (r *PolicyRule) resourceMatches(resource, sub string) bool {
	for _, res := range r.Resources {
		switch {
		case res == "*":
			return true
		case sub == "" && res == resource:
			return true
		case sub != "" && len(res) == len(resource)+1+len(sub) && strings.HasPrefix(res, resource) && res[len(resource)] == '/' && strings.HasSuffix(res, sub):
			return true
		case sub != "" && strings.HasPrefix(res, "*/") && res[2:] == sub:
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == "*" || x == s {
			return true
		}
	}
	return false
}

// Covers reports whether the owner's rules allow everything rule allows:
// Kubernetes' escalation check (a user may only create a role, or bind
// one, whose every rule their own rules cover). A wildcard in rule is only
// covered by a wildcard.
func Covers(owner []PolicyRule, rule PolicyRule) bool {
	for _, atom := range breakdown(rule) {
		covered := false
		for i := range owner {
			if owner[i].coversAtom(atom) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}

// breakdown splits a rule into rules of one verb, group, resource and name.
func breakdown(r PolicyRule) []PolicyRule {
	var out []PolicyRule
	for _, verb := range r.Verbs {
		for _, u := range r.NonResourceURLs {
			out = append(out, PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{u}})
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if len(r.ResourceNames) == 0 {
					out = append(out, PolicyRule{Verbs: []string{verb}, APIGroups: []string{g}, Resources: []string{res}})
				}
				for _, n := range r.ResourceNames {
					out = append(out, PolicyRule{Verbs: []string{verb}, APIGroups: []string{g}, Resources: []string{res}, ResourceNames: []string{n}})
				}
			}
		}
	}
	return out
}

// coversAtom: the owner rule (with its wildcards) allows the atomic rule
// (one of each, itself maybe a wildcard, then only covered by one).
func (r *PolicyRule) coversAtom(a PolicyRule) bool {
	if !contains(r.Verbs, a.Verbs[0]) {
		return false
	}
	if len(a.NonResourceURLs) > 0 {
		u := a.NonResourceURLs[0]
		for _, o := range r.NonResourceURLs {
			if o == "*" || o == u || (strings.HasSuffix(o, "*") && strings.HasPrefix(u, strings.TrimSuffix(o, "*"))) {
				return true
			}
		}
		return false
	}
	if !contains(r.APIGroups, a.APIGroups[0]) {
		return false
	}
	res := a.Resources[0]
	resource, sub, _ := strings.Cut(res, "/")
	if !r.resourceMatches(resource, sub) {
		return false
	}
	if len(r.ResourceNames) == 0 {
		return true
	}
	return len(a.ResourceNames) == 1 && contains(r.ResourceNames, a.ResourceNames[0]) && a.ResourceNames[0] != "*"
}
