package rbac

import (
	"strings"

	v "github.com/kobune/kobune/api/validation"
)

// SetDefaultsSubjects defaults each subject's apiGroup as Kubernetes does.
func SetDefaultsSubjects(subjects []Subject) {
	for i := range subjects {
		if subjects[i].APIGroup == "" && (subjects[i].Kind == UserKind || subjects[i].Kind == GroupKind) {
			subjects[i].APIGroup = GroupName
		}
	}
}

// setDefaultsRoleRef defaults an empty roleRef.apiGroup to the RBAC group,
// as Kubernetes' rbac/v1 defaults do (the conformance suite's bindings
// leave it out).
func setDefaultsRoleRef(r *RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = GroupName
	}
}

// SetDefaultsRoleBinding defaults roleRef.apiGroup and the subjects' apiGroup.
func SetDefaultsRoleBinding(b *RoleBinding) {
	setDefaultsRoleRef(&b.RoleRef)
	SetDefaultsSubjects(b.Subjects)
}

// SetDefaultsClusterRoleBinding defaults roleRef.apiGroup and the
// subjects' apiGroup.
func SetDefaultsClusterRoleBinding(b *ClusterRoleBinding) {
	setDefaultsRoleRef(&b.RoleRef)
	SetDefaultsSubjects(b.Subjects)
}

// ValidateRules checks a role's rules; namespaced roles may not name
// non-resource URLs.
func ValidateRules(rules []PolicyRule, namespaced bool, p *v.Path) v.ErrorList {
	var errs v.ErrorList
	for i, r := range rules {
		rp := p.Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, v.NewRequired(rp.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, v.NewInvalid(rp.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, v.NewInvalid(rp.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			for j, u := range r.NonResourceURLs {
				if !strings.HasPrefix(u, "/") && u != "*" {
					errs = append(errs, v.NewInvalid(rp.Child("nonResourceURLs").Index(j), u, `must start with "/" (or be "*")`))
				} else if k := strings.Index(u, "*"); k >= 0 && k != len(u)-1 {
					errs = append(errs, v.NewInvalid(rp.Child("nonResourceURLs").Index(j), u, `"*" may only end a non-resource URL`))
				}
			}
			continue
		}
		if len(r.Resources) == 0 {
			errs = append(errs, v.NewRequired(rp.Child("resources"), "resource rules must supply at least one resource"))
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, v.NewRequired(rp.Child("apiGroups"), `resource rules must supply at least one api group ("" is the core group)`))
		}
		for j, res := range r.Resources {
			if res == "" || strings.Count(res, "/") > 1 {
				errs = append(errs, v.NewInvalid(rp.Child("resources").Index(j), res, `must be "resource" or "resource/subresource"`))
			}
		}
	}
	return errs
}

// ValidateRole checks a Role.
func ValidateRole(r *Role) v.ErrorList {
	errs := v.ValidateObjectMeta(&r.ObjectMeta, true, v.IsPathSegmentName, v.NewPath("metadata"))
	return append(errs, ValidateRules(r.Rules, true, v.NewPath("rules"))...)
}

// ValidateClusterRole checks a ClusterRole and its aggregation selectors.
func ValidateClusterRole(r *ClusterRole) v.ErrorList {
	errs := v.ValidateObjectMeta(&r.ObjectMeta, false, v.IsPathSegmentName, v.NewPath("metadata"))
	errs = append(errs, ValidateRules(r.Rules, false, v.NewPath("rules"))...)
	if a := r.AggregationRule; a != nil {
		p := v.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(a.ClusterRoleSelectors) == 0 {
			errs = append(errs, v.NewRequired(p, "at least one clusterRoleSelector is required if aggregationRule is non-nil"))
		}
		for i := range a.ClusterRoleSelectors {
			errs = append(errs, v.ValidateLabelSelector(&a.ClusterRoleSelectors[i], p.Index(i))...)
		}
	}
	return errs
}

func validateBinding(ref RoleRef, subjects []Subject, namespaced bool) v.ErrorList {
	var errs v.ErrorList
	rp := v.NewPath("roleRef")
	if ref.APIGroup != GroupName {
		errs = append(errs, v.NewNotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	ok := false
	for _, k := range kinds {
		ok = ok || ref.Kind == k
	}
	if !ok {
		errs = append(errs, v.NewNotSupported(rp.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, v.NewRequired(rp.Child("name"), ""))
	} else if msg := v.IsPathSegmentName(ref.Name); msg != "" {
		errs = append(errs, v.NewInvalid(rp.Child("name"), ref.Name, msg))
	}
	for i, s := range subjects {
		sp := v.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, v.NewRequired(sp.Child("name"), ""))
		}
		switch s.Kind {
		case ServiceAccountKind:
			if s.APIGroup != "" {
				errs = append(errs, v.NewNotSupported(sp.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if s.Name != "" {
				if msg := v.IsDNS1123Subdomain(s.Name); msg != "" {
					errs = append(errs, v.NewInvalid(sp.Child("name"), s.Name, msg))
				}
			}
			if s.Namespace == "" && !namespaced {
				errs = append(errs, v.NewRequired(sp.Child("namespace"), "a ServiceAccount subject of a ClusterRoleBinding needs its namespace"))
			}
		case UserKind, GroupKind:
			if s.APIGroup != GroupName {
				errs = append(errs, v.NewNotSupported(sp.Child("apiGroup"), s.APIGroup, []string{GroupName}))
			}
		default:
			errs = append(errs, v.NewNotSupported(sp.Child("kind"), s.Kind, []string{ServiceAccountKind, UserKind, GroupKind}))
		}
	}
	return errs
}

// ValidateRoleBinding checks a RoleBinding.
func ValidateRoleBinding(b *RoleBinding) v.ErrorList {
	errs := v.ValidateObjectMeta(&b.ObjectMeta, true, v.IsPathSegmentName, v.NewPath("metadata"))
	return append(errs, validateBinding(b.RoleRef, b.Subjects, true)...)
}

// ValidateClusterRoleBinding checks a ClusterRoleBinding.
func ValidateClusterRoleBinding(b *ClusterRoleBinding) v.ErrorList {
	errs := v.ValidateObjectMeta(&b.ObjectMeta, false, v.IsPathSegmentName, v.NewPath("metadata"))
	return append(errs, validateBinding(b.RoleRef, b.Subjects, false)...)
}

// ValidateRoleRefUpdate: a binding's roleRef cannot change (delete and
// recreate the binding), as in Kubernetes.
func ValidateRoleRefUpdate(n, o RoleRef) v.ErrorList {
	if n != o {
		return v.ErrorList{v.NewInvalid(v.NewPath("roleRef"), n, "cannot change roleRef")}
	}
	return nil
}
