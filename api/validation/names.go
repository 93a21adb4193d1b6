package validation

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
)

var (
	cIdentifierRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// DNS1123LabelMaxLength and DNS1123SubdomainMaxLength are the name limits.
const (
	DNS1123LabelMaxLength     = 63
	DNS1123SubdomainMaxLength = 253
)

// IsDNS1123Label returns why s is not a DNS-1123 label (lowercase
// alphanumerics and '-', at most 63), or "" when it is one.
func IsDNS1123Label(s string) string {
	if len(s) > DNS1123LabelMaxLength {
		return "must be no more than 63 characters"
	}
	if !selector.IsDNS1123Label(s) {
		return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	}
	return ""
}

// IsDNS1123Subdomain returns why s is not a DNS-1123 subdomain, or "".
func IsDNS1123Subdomain(s string) string {
	if len(s) > DNS1123SubdomainMaxLength {
		return "must be no more than 253 characters"
	}
	if !selector.IsDNS1123Subdomain(s) {
		return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
	}
	return ""
}

// IsEnvVarName returns why s is not a valid environment variable name, or
// "": since Kubernetes 1.34 (RelaxedEnvironmentVariableValidation, GA) any
// printable ASCII character but '=' (an env name, an envFrom prefix, a key
// envFrom imports).
func IsEnvVarName(s string) string {
	if s == "" {
		return "environment variable name must be non-empty"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '=' {
			return "a valid environment variable name must consist only of printable ASCII characters other than '='"
		}
	}
	return ""
}

// IsCIdentifier reports whether s is a C identifier.
func IsCIdentifier(s string) bool { return cIdentifierRe.MatchString(s) }

// IsPortName returns why s is not an IANA service name (port name), or "".
func IsPortName(s string) string {
	if len(s) > 15 || !selector.IsDNS1123Label(s) {
		return "must be at most 15 lowercase alphanumerics or '-', starting and ending alphanumeric"
	}
	return ""
}

// NameFunc validates an object's name; kinds use subdomain or label rules.
type NameFunc func(string) string

// ValidateObjectMeta checks name, namespace, labels, annotations and owner
// references. Namespaced kinds must have a namespace; cluster-scoped ones
// must not.
func ValidateObjectMeta(m *meta.ObjectMeta, namespaced bool, nameFn NameFunc, p *Path) ErrorList {
	var errs ErrorList
	switch {
	case m.Name == "":
		errs = append(errs, NewRequired(p.Child("name"), "name or generateName is required"))
	default:
		if msg := nameFn(m.Name); msg != "" {
			errs = append(errs, NewInvalid(p.Child("name"), m.Name, msg))
		}
	}
	if namespaced {
		if m.Namespace == "" {
			errs = append(errs, NewRequired(p.Child("namespace"), ""))
		} else if msg := IsDNS1123Label(m.Namespace); msg != "" {
			errs = append(errs, NewInvalid(p.Child("namespace"), m.Namespace, msg))
		}
	} else if m.Namespace != "" {
		errs = append(errs, NewForbidden(p.Child("namespace"), "not allowed on this type"))
	}
	errs = append(errs, ValidateLabels(m.Labels, p.Child("labels"))...)
	errs = append(errs, ValidateAnnotations(m.Annotations, p.Child("annotations"))...)
	for i, r := range m.OwnerReferences {
		rp := p.Child("ownerReferences").Index(i)
		if r.APIVersion == "" || r.Kind == "" || r.Name == "" || r.UID == "" {
			errs = append(errs, NewInvalid(rp, r.Name, "apiVersion, kind, name and uid are required"))
		}
	}
	return errs
}

// ValidateLabels checks each label key and value.
func ValidateLabels(labels map[string]string, p *Path) ErrorList {
	var errs ErrorList
	for k, v := range labels {
		if err := selector.ValidLabelKey(k); err != nil {
			errs = append(errs, NewInvalid(p, k, err.Error()))
		}
		if err := selector.ValidLabelValue(v); err != nil {
			errs = append(errs, NewInvalid(p.Key(k), v, err.Error()))
		}
	}
	return errs
}

const totalAnnotationSizeLimit = 256 * 1024

// ValidateAnnotations checks the keys and the total size of annotations.
func ValidateAnnotations(ann map[string]string, p *Path) ErrorList {
	var errs ErrorList
	size := 0
	for k, v := range ann {
		if err := selector.ValidLabelKey(k); err != nil {
			errs = append(errs, NewInvalid(p, k, err.Error()))
		}
		size += len(k) + len(v)
	}
	if size > totalAnnotationSizeLimit {
		errs = append(errs, NewTooLong(p, "", totalAnnotationSizeLimit))
	}
	return errs
}

// ValidateLabelSelector checks a structured selector.
func ValidateLabelSelector(ls *meta.LabelSelector, p *Path) ErrorList {
	if ls == nil {
		return nil
	}
	errs := ValidateLabels(ls.MatchLabels, p.Child("matchLabels"))
	if _, err := selector.FromLabelSelector(ls); err != nil {
		errs = append(errs, NewInvalid(p, "", err.Error()))
	}
	for i, e := range ls.MatchExpressions {
		if err := selector.ValidLabelKey(e.Key); err != nil {
			errs = append(errs, NewInvalid(p.Child("matchExpressions").Index(i).Child("key"), e.Key, err.Error()))
		}
	}
	return errs
}

// ValidateNonnegative checks that an integer field is ≥ 0.
func ValidateNonnegative(v int64, p *Path) ErrorList {
	if v < 0 {
		return ErrorList{NewInvalid(p, v, "must be greater than or equal to 0")}
	}
	return nil
}

// IsPathSegmentName is Kubernetes' rule for names that need only be one
// segment of a URL path (RBAC roles and bindings, such as
// "system:kube-scheduler"): not "." or "..", no "/" and no "%".
func IsPathSegmentName(s string) string {
	switch {
	case s == "." || s == "..":
		return `may not be "." or ".."`
	case strings.ContainsAny(s, "/%"):
		return `may not contain "/" or "%"`
	}
	return ""
}

// IsSignerName is "" for a signer name of Kubernetes' form
// ("example.com/signer-name": a DNS domain, "/", a path segment), or why
// it is not one.
func IsSignerName(s string) string {
	domain, path, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(path, "/") || domain == "" || path == "" {
		return "must be a fully qualified domain and path of the form 'example.com/signer-name'"
	}
	if msg := IsDNS1123Subdomain(domain); msg != "" {
		return fmt.Sprintf("validating domain %q: %s", domain, msg)
	}
	if msg := IsPathSegmentName(path); msg != "" {
		return fmt.Sprintf("validating path %q: %s", path, msg)
	}
	return ""
}
